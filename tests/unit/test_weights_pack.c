/*
 * test_weights_pack.c — the packed weight formats (weights_pack.c,
 * weights.c): every element of a packed matrix is the value weights_pack.h
 * promises, for every (stored type, format) pair, ggml's block types with
 * sane and wild scales alike, in the vector tiers' layout and (Q8_0) with
 * the signed codes the amx tiers own.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "alloc.h"
#include "ggml_blocks.h"
#include "weights_fixture.h"

/* Element i of a tensor stored as type (bytes src; f32 holds the values
 * an F32 tensor stores). */
static float stored_value(lms_dtype type, const unsigned char *src, const float *f32, size_t i)
{
    uint16_t h;
    switch (type) {
    case LMS_DTYPE_F16:
    case LMS_DTYPE_BF16:
        memcpy(&h, src + 2 * i, 2);
        return type == LMS_DTYPE_F16 ? lms_f16_to_f32(h) : lms_bf16_to_f32(h);
    case LMS_DTYPE_Q8_0:
        memcpy(&h, src + 34 * (i / 32), 2);
        return (float)(int8_t)src[34 * (i / 32) + 2 + i % 32] * lms_f16_to_f32(h);
    default:
        return f32[i];
    }
}

/* The value weights_pack.h promises for element i packed as format. */
static float expected(lms_dtype type, const unsigned char *src, const float *f32, size_t i,
                      lms_weights_format format)
{
    const float stored = stored_value(type, src, f32, i);
    if (format == LMS_WEIGHTS_F16 || (format == LMS_WEIGHTS_BF16 && type == LMS_DTYPE_BF16))
        return stored;
    if (format == LMS_WEIGHTS_BF16) return lms_bf16_to_f32(lms_f32_to_bf16(stored));
    if (type == LMS_DTYPE_Q8_0) return stored;
    /* Q8 from floats: ggml's Q8_0 of the element's block of 32 */
    float amax = 0.0f;
    for (size_t j = i / 32 * 32; j < i / 32 * 32 + 32; j++)
        amax = fmaxf(amax, fabsf(stored_value(type, src, f32, j)));
    const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
    return (float)(int8_t)roundf(stored * id) * lms_f16_to_f32(lms_f32_to_f16(d));
}

/* Every (stored type, format) pair: lms_weights_row gives the promised
 * value of every element, on 45 × 96 (Q8_0) or 45 × 70 matrices. */
static void test_packed_values(void **state)
{
    (void)state;
    const lms_dtype types[] = {LMS_DTYPE_F32, LMS_DTYPE_F16, LMS_DTYPE_BF16, LMS_DTYPE_Q8_0};
    const lms_weights_format formats[] = {LMS_WEIGHTS_F16, LMS_WEIGHTS_BF16, LMS_WEIGHTS_Q8};
    for (size_t t = 0; t < 4; t++) {
        /* k a multiple of 32 for Q8_0 (whole blocks), and for Q8 from
         * floats (its reference reads whole blocks) */
        const int32_t n = 45, k = 96;
        uint64_t seed = 3 + t;
        float *v = malloc((size_t)n * k * sizeof *v), *row = malloc((size_t)k * sizeof *row);
        for (size_t i = 0; i < (size_t)n * k; i++)
            v[i] = uniform(&seed) * (i % 7 == 0 ? 40.0f : 1.0f);
        unsigned char *src = store(types[t], v, n, k);
        for (size_t f = 0; f < 3; f++) {
            if (!lms_pack_supported(types[t], formats[f])) continue;
            void *buffer;
            const lms_weights w = pack(types[t], src, formats[f], n, k, &buffer);
            for (int32_t r = 0; r < n; r++) {
                lms_weights_row(&w, r, row);
                for (int32_t i = 0; i < k; i++) {
                    const float want = expected(types[t], src, v, (size_t)r * k + i, formats[f]);
                    if (memcmp(&row[i], &want, sizeof want))
                        fail_msg("%s -> %s: [%d][%d] = %.9g, want %.9g", lms_dtype_name(types[t]),
                                 lms_weights_format_name(formats[f]), r, i, row[i], want);
                }
            }
            lms_free(buffer);
        }
        free(src);
        free(v);
        free(row);
    }
}

/* Every block type packed as Q8 keeps ggml's values exactly: each
 * element equals the decoder's (ggml_blocks.h: ggml's bit for bit), sane
 * and wild scales alike (NaN where it gives NaN); as BF16 their bf16
 * rounding. */
static void test_packed_block_values(void **state)
{
    (void)state;
    const lms_dtype types[] = {LMS_DTYPE_Q4_0, LMS_DTYPE_Q4_1, LMS_DTYPE_Q5_0, LMS_DTYPE_Q5_1,
                               LMS_DTYPE_Q8_0, LMS_DTYPE_Q4_K, LMS_DTYPE_Q5_K, LMS_DTYPE_Q6_K};
    const int32_t n = 45, k = 512;
    float *want = malloc((size_t)n * k * sizeof *want), *row = malloc((size_t)k * sizeof *row);
    for (size_t t = 0; t < sizeof types / sizeof *types; t++)
        for (int wild = 0; wild < 2; wild++) {
            unsigned char *src = random_blocks(types[t], n, k, 7 + t, wild);
            lms_ggml_blocks_to_f32(types[t], src,
                                   (size_t)n * k / lms_dtype_block_elements(types[t]), want);
            const lms_weights_format formats[] = {LMS_WEIGHTS_Q8, LMS_WEIGHTS_BF16};
            for (size_t f = 0; f < 2; f++) {
                void *buffer;
                const lms_weights w = pack(types[t], src, formats[f], n, k, &buffer);
                for (int32_t r = 0; r < n; r++) {
                    lms_weights_row(&w, r, row);
                    for (int32_t i = 0; i < k; i++) {
                        float v = want[(size_t)r * k + i];
                        if (formats[f] == LMS_WEIGHTS_BF16) v = lms_bf16_to_f32(lms_f32_to_bf16(v));
                        if (!same_bits(row[i], v))
                            fail_msg("%s%s -> %s: [%d][%d] = %a, want %a", lms_dtype_name(types[t]),
                                     wild ? " (wild scales)" : "",
                                     lms_weights_format_name(formats[f]), r, i, (double)row[i],
                                     (double)v);
                    }
                }
                lms_free(buffer);
            }
            free(src);
        }
    free(want);
    free(row);
}

/* Q8_0 packed for a tier that holds full-range codes as signed bytes
 * (weights.h signed_codes, set as compute_tier_own_layout sets it) keeps
 * the same numbers: each code byte is the biased layout's with its top bit
 * flipped, the scales are the same, and every element is ggml's value. */
static void test_q8_0_signed_codes(void **state)
{
    (void)state;
    const int32_t n = 45, k = 512;
    float *want = malloc((size_t)n * k * sizeof *want), *row = malloc((size_t)k * sizeof *row);
    for (int wild = 0; wild < 2; wild++) {
        unsigned char *src = random_blocks(LMS_DTYPE_Q8_0, n, k, 19, wild);
        lms_ggml_blocks_to_f32(LMS_DTYPE_Q8_0, src, (size_t)n * k / 32, want);
        void *biased_buffer, *signed_buffer;
        const lms_weights biased = pack(LMS_DTYPE_Q8_0, src, LMS_WEIGHTS_Q8, n, k, &biased_buffer);
        lms_weights w;
        lms_error err = {0};
        assert_int_equal(
            lms_weights_alloc(&w, LMS_DTYPE_Q8_0, LMS_WEIGHTS_Q8, n, k, &signed_buffer, &err),
            LMS_OK);
        w.layout.bias = 0;
        w.layout.signed_codes = true;
        const lms_pack_job job = {LMS_DTYPE_Q8_0, src, &w, false};
        assert_int_equal(lms_pack_run(&job, 1, NULL, &err), LMS_OK);
        size_t parts[LMS_Q8_PARTS];
        lms_weights_q8_parts(&w, parts);
        for (size_t i = 0; i < parts[0]; i++)
            if (w.q8[i] != (biased.q8[i] ^ 0x80))
                fail_msg("code byte %zu: %#x, the biased layout's %#x", i, w.q8[i], biased.q8[i]);
        assert_memory_equal(w.scale16, biased.scale16, parts[1]);
        for (int32_t r = 0; r < n; r++) {
            lms_weights_row(&w, r, row);
            for (int32_t i = 0; i < k; i++)
                if (!same_bits(row[i], want[(size_t)r * k + i]))
                    fail_msg("[%d][%d] = %a, want %a", r, i, (double)row[i],
                             (double)want[(size_t)r * k + i]);
        }
        lms_free(signed_buffer);
        lms_free(biased_buffer);
        free(src);
    }
    free(want);
    free(row);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_values),
        cmocka_unit_test(test_packed_block_values),
        cmocka_unit_test(test_q8_0_signed_codes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
