/*
 * dtype.h — the storage types the loaders hand to the weight conversion:
 * float formats, and ggml's block formats (a block of elements sharing its
 * scales, stored in a fixed number of bytes), with each type's block
 * geometry.
 */
#ifndef LMS_DTYPE_H
#define LMS_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
    LMS_DTYPE_F32,
    LMS_DTYPE_F16,
    LMS_DTYPE_BF16,
    LMS_DTYPE_Q4_0,
    LMS_DTYPE_Q4_1,
    LMS_DTYPE_Q5_0,
    LMS_DTYPE_Q5_1,
    LMS_DTYPE_Q8_0,
    LMS_DTYPE_Q4_K,
    LMS_DTYPE_Q5_K,
    LMS_DTYPE_Q6_K,
} lms_dtype;

/* ggml's spelling: "f32", "q8_0", "q4_K", ... */
const char *lms_dtype_name(lms_dtype type);

/* The storage type of a tensor of ggml type ggml_type (ggml.h's id);
 * false for the ggml types that are not loadable. */
bool lms_dtype_of_ggml(uint32_t ggml_type, lms_dtype *out);

/* Elements per block (1 for the float formats) and the bytes a block
 * occupies. A tensor of a block type holds whole blocks in every row. */
size_t lms_dtype_block_elements(lms_dtype type);
size_t lms_dtype_block_bytes(lms_dtype type);

#endif
