/*
 * fuzz_weights_pack.c — libFuzzer target for packing stored tensors into
 * the kernels' formats (weights_pack.c) and multiplying by them (matmul.c,
 * kernels_*.c). The first bytes pick the stored type (f32, f16, bf16, or
 * any of ggml's block types, with any scale bits: NaN, infinities,
 * subnormals), the shape (rows not a multiple of the panel, k not a
 * multiple of the block for the float types, 1 to 6 blocks for the block
 * types) and the activation rows; the rest, copied to a buffer of exactly
 * the tensor's size, is the tensor. Every format it can be packed into is
 * packed and read back row by row — a block type's Q8 rows must equal its
 * decoded values (ggml_blocks.h), NaN matching NaN — and multiplied; each
 * kernel tier the CPU runs must give the same bits, ASan/UBSan watch the
 * rest.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu.h"
#include "ggml_blocks.h"
#include "matmul.h"
#include "weights_pack.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const lms_dtype TYPES[] = {LMS_DTYPE_F32,  LMS_DTYPE_F16,  LMS_DTYPE_BF16, LMS_DTYPE_Q4_0,
                                  LMS_DTYPE_Q4_1, LMS_DTYPE_Q5_0, LMS_DTYPE_Q5_1, LMS_DTYPE_Q8_0,
                                  LMS_DTYPE_Q4_K, LMS_DTYPE_Q5_K, LMS_DTYPE_Q6_K};
#define N_TYPES (sizeof TYPES / sizeof *TYPES)
static const lms_weights_format FORMATS[] = {LMS_WEIGHTS_F16, LMS_WEIGHTS_BF16, LMS_WEIGHTS_Q8};

static bool same_bits(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], sizeof *a) && !(isnan(a[i]) && isnan(b[i]))) return false;
    return true;
}

/* x·Wᵀ on every tier the CPU runs that multiplies w's format in its
 * packed order: the same bits on each. (A BF16 matrix here is k-major: the
 * amx tiers, with their own order and sequence, are test_matmul's.) */
static void multiply(const lms_weights *w, const float *x, int32_t rows)
{
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    float *first = calloc((size_t)rows * w->n, sizeof(float));
    float *y = calloc((size_t)rows * w->n, sizeof(float));
    matmul_scratch *s = matmul_scratch_create(rows, w->k);
    if (!first || !y || !s) abort();
    const compute_tier *first_tier = NULL;
    for (const compute_tier *const *t = compute_tiers; *t; t++) {
        if (!(*t)->runs_on(&cpu) || !compute_tier_multiplies(*t, w->format) ||
            (w->format == LMS_WEIGHTS_BF16 && (*t)->bf16_at != w->bf16_at))
            continue;
        memset(y, 0, (size_t)rows * w->n * sizeof *y);
        const matmul_config cfg = {*t};
        matmul(&cfg, w, x, rows, KERNEL_ACCUMULATE, first_tier ? y : first, s);
        if (!first_tier) {
            first_tier = *t;
        } else if (!same_bits(first, y, (size_t)rows * w->n)) {
            fprintf(stderr, "the %s and %s tiers differ on a %s matrix\n", first_tier->name,
                    (*t)->name, lms_weights_format_name(w->format));
            abort();
        }
    }
    matmul_scratch_free(s);
    free(first);
    free(y);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    const lms_dtype type = TYPES[data[0] % N_TYPES];
    const size_t block = lms_dtype_block_elements(type);
    const int32_t n = 1 + data[1] % 70, rows = 1 + data[3] % 9;
    const int32_t k = block > 1 ? (int32_t)block * (1 + data[2] % 6) : 1 + data[2] % 200;
    const size_t bytes = (size_t)n * k / block * lms_dtype_block_bytes(type);
    if (size - 4 < bytes) return 0;
    unsigned char *src = malloc(bytes);
    float *row = malloc((size_t)k * sizeof *row), *x = malloc((size_t)rows * k * sizeof *x);
    float *decoded = malloc((size_t)n * k * sizeof *decoded);
    if (!src || !row || !x || !decoded) abort();
    memcpy(src, data + 4, bytes);
    if (block > 1) lms_ggml_blocks_to_f32(type, src, (size_t)n * k / block, decoded);
    for (size_t i = 0; i < (size_t)rows * k; i++) /* the tail's bytes, else a ramp */
        x[i] = 4 + bytes + i < size ? (float)(int8_t)data[4 + bytes + i] / 8.0f : (float)i / 64.0f;
    for (size_t f = 0; f < sizeof FORMATS / sizeof *FORMATS; f++) {
        if (!lms_pack_supported(type, FORMATS[f])) continue;
        lms_weights w;
        void *buffer;
        lms_error err;
        if (lms_weights_alloc(&w, type, FORMATS[f], n, k, &buffer, &err) != LMS_OK) abort();
        const lms_pack_job job = {type, src, &w, false};
        if (lms_pack_run(&job, 1, NULL, &err) != LMS_OK) abort();
        for (int32_t r = 0; r < n; r++) {
            lms_weights_row(&w, r, row);
            if (block > 1 && w.format == LMS_WEIGHTS_Q8 &&
                !same_bits(row, decoded + (size_t)r * k, (size_t)k)) {
                fprintf(stderr, "%s packed as q8: row %d differs from its decoded values\n",
                        lms_dtype_name(type), r);
                abort();
            }
        }
        multiply(&w, x, rows);
        lms_free(buffer);
    }
    free(src);
    free(row);
    free(x);
    free(decoded);
    return 0;
}
