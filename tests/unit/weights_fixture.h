/*
 * weights_fixture.h — matrices for the tests of packing and of the kernels
 * that read packed matrices: random values, their stored bytes in each
 * type (written here independently of the engine), and packing.
 */
#ifndef LMS_TEST_WEIGHTS_FIXTURE_H
#define LMS_TEST_WEIGHTS_FIXTURE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "half.h"
#include "weights_pack.h"

static inline float uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
}

/* A stored tensor of type made from f32 values: its bytes (Q8_0 by ggml's
 * reference quantiser, written out here independently of the engine). */
static inline unsigned char *store(lms_dtype type, const float *v, int32_t n, int32_t k)
{
    const size_t count = (size_t)n * k;
    unsigned char *out = malloc(count * 4);
    assert_non_null(out);
    for (size_t i = 0; i < count; i++) {
        if (type == LMS_DTYPE_F32) memcpy(out + 4 * i, &v[i], 4);
        uint16_t h = type == LMS_DTYPE_F16 ? lms_f32_to_f16(v[i]) : lms_f32_to_bf16(v[i]);
        if (type == LMS_DTYPE_F16 || type == LMS_DTYPE_BF16) memcpy(out + 2 * i, &h, 2);
    }
    if (type == LMS_DTYPE_Q8_0) {
        for (size_t b = 0; b < count / 32; b++) {
            float amax = 0.0f;
            for (int i = 0; i < 32; i++)
                amax = fmaxf(amax, fabsf(v[32 * b + i]));
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const uint16_t dh = lms_f32_to_f16(d);
            memcpy(out + 34 * b, &dh, 2);
            for (int i = 0; i < 32; i++)
                out[34 * b + 2 + i] = (unsigned char)(int8_t)roundf(v[32 * b + i] * id);
        }
    }
    return out;
}

/* Where a block type keeps its f16 scales (d, and dmin or m): offsets in
 * the block, -1 for none. */
static inline void scale_fields(lms_dtype type, int *d, int *dmin)
{
    *d = type == LMS_DTYPE_Q6_K ? 208 : 0;
    *dmin = type == LMS_DTYPE_Q4_1 || type == LMS_DTYPE_Q5_1 || type == LMS_DTYPE_Q4_K ||
                    type == LMS_DTYPE_Q5_K
                ? 2
                : -1;
}

/* n × k values stored as a block type: random bytes, so every code,
 * sub-scale and sub-minimum occurs; with sane scales (finite, |d| and
 * |dmin| of 2^-10 to 2^-5, either sign) or, when wild, the random bits
 * (NaN, infinities, subnormals). */
static inline unsigned char *random_blocks(lms_dtype type, int32_t n, int32_t k, uint64_t seed,
                                           bool wild)
{
    const size_t n_blocks = (size_t)n * k / lms_dtype_block_elements(type);
    const size_t bytes = lms_dtype_block_bytes(type);
    unsigned char *out = malloc(n_blocks * bytes);
    assert_non_null(out);
    for (size_t i = 0; i < n_blocks * bytes; i++)
        out[i] = (unsigned char)(uniform(&seed) * 128.0f + 128.0f);
    int fields[2];
    scale_fields(type, &fields[0], &fields[1]);
    for (size_t b = 0; b < n_blocks && !wild; b++)
        for (int f = 0; f < 2; f++) {
            if (fields[f] < 0) continue;
            const uint16_t h = lms_f32_to_f16(ldexpf(uniform(&seed), -5));
            memcpy(out + b * bytes + fields[f], &h, 2);
        }
    return out;
}

static inline bool same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0 || (isnan(a) && isnan(b));
}

/* A packed n × k matrix of format from stored type; frees nothing: the
 * caller lms_free's *buffer. */
static inline lms_weights pack(lms_dtype type, const unsigned char *src, lms_weights_format format,
                               int32_t n, int32_t k, void **buffer)
{
    lms_weights w;
    lms_error err = {0};
    assert_int_equal(lms_weights_alloc(&w, type, format, n, k, buffer, &err), LMS_OK);
    const lms_pack_job job = {type, src, &w, false};
    assert_int_equal(lms_pack_run(&job, 1, NULL, &err), LMS_OK);
    return w;
}

#endif
