/*
 * alloc.c — accounted, aligned allocation (see alloc.h).
 *
 * A 64-byte header in front of each block records its size, so lms_free can
 * subtract it without the caller passing the size back.
 */
#include "alloc.h"

#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HEADER 64

static atomic_size_t current_bytes;
static atomic_size_t peak_bytes;

void *lms_alloc(size_t bytes)
{
    if (bytes == 0 || bytes > SIZE_MAX - 2 * HEADER) return NULL;
    size_t total = (bytes + HEADER + 63) & ~(size_t)63;
    unsigned char *base = aligned_alloc(64, total);
    if (!base) return NULL;
    memcpy(base, &bytes, sizeof bytes);
    size_t now = atomic_fetch_add(&current_bytes, bytes) + bytes;
    size_t peak = atomic_load(&peak_bytes);
    while (now > peak && !atomic_compare_exchange_weak(&peak_bytes, &peak, now)) {
    }
    return base + HEADER;
}

void *lms_calloc(size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size) return NULL;
    void *p = lms_alloc(n * size);
    if (p) memset(p, 0, n * size);
    return p;
}

void lms_free(void *p)
{
    if (!p) return;
    unsigned char *base = (unsigned char *)p - HEADER;
    size_t bytes;
    memcpy(&bytes, base, sizeof bytes);
    atomic_fetch_sub(&current_bytes, bytes);
    free(base);
}

void lms_advise_huge_pages(void *p, size_t bytes)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t first = ((uintptr_t)p + page - 1) / page * page;
    const uintptr_t last = ((uintptr_t)p + bytes) / page * page;
    if (last > first) madvise((void *)first, last - first, MADV_HUGEPAGE);
}

size_t lms_alloc_current_bytes(void)
{
    return atomic_load(&current_bytes);
}

size_t lms_alloc_peak_bytes(void)
{
    return atomic_load(&peak_bytes);
}

void lms_alloc_reset_peak(void)
{
    atomic_store(&peak_bytes, atomic_load(&current_bytes));
}
