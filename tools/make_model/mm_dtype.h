/*
 * mm_dtype.h — the numeric types the model maker stores weight matrices in,
 * with what a GGUF needs to know of each: ggml's tensor type id, the
 * llama_ftype a file of mostly that type declares, and the block geometry.
 */
#ifndef MM_DTYPE_H
#define MM_DTYPE_H

#include <stdint.h>

#include "lmscore.h"

/* The block types exist in GGUF only: their Hugging Face twin holds the
 * unquantised f32 values. */
typedef enum {
    MM_DTYPE_F32,
    MM_DTYPE_F16,
    MM_DTYPE_BF16,
    MM_DTYPE_Q4_0,
    MM_DTYPE_Q4_1,
    MM_DTYPE_Q5_0,
    MM_DTYPE_Q5_1,
    MM_DTYPE_Q8_0,
    MM_DTYPE_Q4_K,
    MM_DTYPE_Q5_K,
    MM_DTYPE_Q6_K,
} mm_dtype;

#define MM_DTYPE_COUNT (MM_DTYPE_Q6_K + 1)

typedef struct {
    const char *name;   /* ggml's: "f32", "q8_0", "q4_K" */
    uint32_t ggml_type; /* ggml.h's GGML_TYPE_* */
    uint32_t file_type; /* llama.h's LLAMA_FTYPE_* for general.file_type */
    int64_t block;      /* elements per block; 1 for the float types */
    uint64_t block_bytes;
} mm_dtype_info;

const mm_dtype_info *mm_dtype_about(mm_dtype dtype);
const char *mm_dtype_name(mm_dtype dtype);
/* Accepts ggml's names in any letter case ("q4_K", "Q4_K", "q4_k"). */
lms_status mm_dtype_parse(const char *text, mm_dtype *out, lms_error *err);

/* Bytes of n elements (whole blocks) of the type. */
static inline uint64_t mm_dtype_bytes(mm_dtype dtype, int64_t n)
{
    const mm_dtype_info *t = mm_dtype_about(dtype);
    return (uint64_t)(n / t->block) * t->block_bytes;
}

#endif
