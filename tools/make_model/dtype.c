/*
 * dtype.c — the model maker's storage types (see mm_dtype.h). Type ids and
 * block sizes are ggml's (ggml.h, ggml-common.h); a file of K-quants
 * declares llama.cpp's "_S" ftype, the one whose tensors are all that type.
 */
#include "mm_dtype.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

static const mm_dtype_info DTYPES[MM_DTYPE_COUNT] = {
    [MM_DTYPE_F32] = {"f32", 0, 0, 1, 4},         [MM_DTYPE_F16] = {"f16", 1, 1, 1, 2},
    [MM_DTYPE_BF16] = {"bf16", 30, 32, 1, 2},     [MM_DTYPE_Q4_0] = {"q4_0", 2, 2, 32, 18},
    [MM_DTYPE_Q4_1] = {"q4_1", 3, 3, 32, 20},     [MM_DTYPE_Q5_0] = {"q5_0", 6, 8, 32, 22},
    [MM_DTYPE_Q5_1] = {"q5_1", 7, 9, 32, 24},     [MM_DTYPE_Q8_0] = {"q8_0", 8, 7, 32, 34},
    [MM_DTYPE_Q4_K] = {"q4_K", 12, 14, 256, 144}, [MM_DTYPE_Q5_K] = {"q5_K", 13, 16, 256, 176},
    [MM_DTYPE_Q6_K] = {"q6_K", 14, 18, 256, 210},
};

const mm_dtype_info *mm_dtype_about(mm_dtype dtype)
{
    return &DTYPES[dtype];
}

const char *mm_dtype_name(mm_dtype dtype)
{
    return DTYPES[dtype].name;
}

lms_status mm_dtype_parse(const char *text, mm_dtype *out, lms_error *err)
{
    char known[128] = "";
    for (int d = 0; d < MM_DTYPE_COUNT; d++) {
        if (strcasecmp(text, DTYPES[d].name) == 0) {
            *out = (mm_dtype)d;
            return LMS_OK;
        }
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", d ? ", " : "", DTYPES[d].name);
    }
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_dtype", "dtype", "unknown dtype '%s' (%s)",
                    text, known);
}
