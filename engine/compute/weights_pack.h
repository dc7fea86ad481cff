/*
 * weights_pack.h — stored tensors into the packed formats of weights.h.
 *
 * What each (stored type, format) pair does to the values:
 *
 *   any type -> F32                its f32 values: exact (ggml's blocks
 *                                  as dequantize_row_* gives them)
 *   same 16-bit type -> F16/BF16   copied bits: exact
 *   ggml block type -> Q8          each block's own codes, scales and
 *                                  offsets (weights.h): exact, every value
 *                                  the one ggml's dequantize_row_* gives
 *   F32/F16/BF16 -> Q8             ggml's Q8_0 quantiser on the f32 values
 *                                  (a Q8_0 GGUF of the same weights would
 *                                  hold the same codes and scales)
 *   others -> BF16                 the f32 value rounded to bf16 (nearest
 *                                  even)
 *
 * Packing runs in parallel (OpenMP), in chunks of panels handed out
 * dynamically over all the jobs at once, into buffers that ask for
 * transparent huge pages (a load writes gigabytes once: 2 MiB faults, not
 * 4 KiB ones).
 */
#ifndef LMS_WEIGHTS_PACK_H
#define LMS_WEIGHTS_PACK_H

#include <stdbool.h>
#include <stddef.h>

#include "lmscore.h"
#include "dtype.h"
#include "weights.h"

/* Can a tensor stored as type become format? */
bool lms_pack_supported(lms_dtype type, lms_weights_format format);

/* Sets *w to an n × k matrix of format for a tensor stored as type (which
 * picks a Q8 matrix's layout) with its data in one lms_alloc'ed buffer,
 * returned in *buffer (the caller owns it; the contents are written by
 * lms_pack_run). */
lms_status lms_weights_alloc(lms_weights *w, lms_dtype type, lms_weights_format format, int32_t n,
                             int32_t k, void **buffer, lms_error *err);

/* One tensor to pack: src holds the n × k matrix dst describes (allocated
 * for type), stored row-major as type (a block type: k a multiple of its
 * block). When release_source, src lies in a read-only file mapping and
 * the pages of each packed piece are dropped (MADV_DONTNEED: they would
 * read back from the file), so that a load holds the packed weights and
 * not also the file. */
typedef struct {
    lms_dtype type;
    const void *src;
    const lms_weights *dst;
    bool release_source;
} lms_pack_job;

/* stop (may be NULL) is polled before each chunk; once it says stop the
 * call fails with LMS_ERR_CANCELLED and the outputs are partly written. */
lms_status lms_pack_run(const lms_pack_job *jobs, size_t n_jobs, const lms_stop *stop,
                        lms_error *err);

#endif
