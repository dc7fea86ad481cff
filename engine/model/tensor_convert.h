/*
 * tensor_convert.h — widening stored weights to f32: F16, BF16, ggml's
 * block formats (ggml_blocks.h), and F32 itself (a copy, for data that is
 * not 4-byte aligned in its file).
 *
 * Sources may sit at any byte address. Conversion runs in parallel (OpenMP)
 * and the inner loops are plain loops the compiler vectorises.
 */
#ifndef LMS_TENSOR_CONVERT_H
#define LMS_TENSOR_CONVERT_H

#include <stddef.h>

#include "dtype.h"
#include "lmscore.h"

/* One tensor to convert: n elements of type at src into dst (n a multiple
 * of the type's block). */
typedef struct {
    lms_dtype type;
    const void *src;
    float *dst;
    size_t n;
} lms_convert_job;

/* Runs all the jobs in one parallel region, in chunks handed out
 * dynamically: a model's few hundred tensors of very different sizes keep
 * every thread busy, with one barrier at the end instead of one per
 * tensor. stop (may be NULL) is polled before each chunk of 256 KB of
 * output; once it says stop, the remaining chunks are skipped and the call
 * fails with LMS_ERR_CANCELLED (the outputs are then partly written). */
lms_status lms_convert_to_f32(const lms_convert_job *jobs, size_t n_jobs, const lms_stop *stop,
                              lms_error *err);

#endif
