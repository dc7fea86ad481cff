/*
 * alloc.h — the engine's accounted heap.
 *
 * Every sizeable engine buffer (activations, attention scratch, KV caches,
 * converted weights) goes through lms_alloc so that the engine can report how
 * many bytes it holds now and at its peak (lms_alloc_current_bytes and
 * lms_alloc_peak_bytes in lmscore.h). Tests use the peak to prove that an
 * algorithm's memory grows as O(T) and not O(T^2); the service reports it.
 * Buffers are 64-byte aligned for SIMD and sgemm.
 */
#ifndef LMS_ALLOC_H
#define LMS_ALLOC_H

#include <stddef.h>

#include "lmscore.h"

void *lms_alloc(size_t bytes);           /* NULL on failure or bytes == 0 */
void *lms_calloc(size_t n, size_t size); /* zeroed; NULL on overflow */
void lms_free(void *p);

/* Asks the kernel for transparent huge pages under the whole pages of
 * [p, p + bytes) (a hint: nothing happens where THP is off). A buffer of
 * gigabytes written once at load then faults in 2 MiB at a time, not
 * 4 KiB, and its reads miss the TLB less. */
void lms_advise_huge_pages(void *p, size_t bytes);

#endif
