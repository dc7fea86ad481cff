/*
 * dtype.c — names, ggml type ids and block geometry of the storage types
 * (see dtype.h), as ggml.h and ggml-common.h define them: 32-element
 * blocks for the classic quants, 256-element super-blocks for the K-quants.
 */
#include "dtype.h"

static const struct {
    const char *name;
    uint32_t ggml_type;
    size_t elements, bytes;
} DTYPES[] = {
    [LMS_DTYPE_F32] = {"f32", 0, 1, 4},        [LMS_DTYPE_F16] = {"f16", 1, 1, 2},
    [LMS_DTYPE_BF16] = {"bf16", 30, 1, 2},     [LMS_DTYPE_Q4_0] = {"q4_0", 2, 32, 18},
    [LMS_DTYPE_Q4_1] = {"q4_1", 3, 32, 20},    [LMS_DTYPE_Q5_0] = {"q5_0", 6, 32, 22},
    [LMS_DTYPE_Q5_1] = {"q5_1", 7, 32, 24},    [LMS_DTYPE_Q8_0] = {"q8_0", 8, 32, 34},
    [LMS_DTYPE_Q4_K] = {"q4_K", 12, 256, 144}, [LMS_DTYPE_Q5_K] = {"q5_K", 13, 256, 176},
    [LMS_DTYPE_Q6_K] = {"q6_K", 14, 256, 210},
};
#define N_DTYPES (sizeof DTYPES / sizeof DTYPES[0])

bool lms_dtype_of_ggml(uint32_t ggml_type, lms_dtype *out)
{
    for (size_t i = 0; i < N_DTYPES; i++) {
        if (DTYPES[i].ggml_type == ggml_type) {
            *out = (lms_dtype)i;
            return true;
        }
    }
    return false;
}

const char *lms_dtype_name(lms_dtype type)
{
    return DTYPES[type].name;
}

size_t lms_dtype_block_elements(lms_dtype type)
{
    return DTYPES[type].elements;
}

size_t lms_dtype_block_bytes(lms_dtype type)
{
    return DTYPES[type].bytes;
}
