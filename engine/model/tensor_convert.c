/*
 * tensor_convert.c — F16/BF16/Q8_0/F32 → f32 (see tensor_convert.h).
 *
 * The F16 conversion is the branch-free bit manipulation from Maratyszcza's
 * FP16 library: it handles normals, subnormals, zeros, infinities and NaNs
 * with integer and float arithmetic only, so the loop vectorises without
 * needing F16C.
 */
#include "tensor_convert.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Elements per parallel task: big enough to amortise scheduling, a
 * multiple of the Q8_0 block. */
#define CHUNK_ELEMENTS (64 * 1024)

const char *lms_dtype_name(lms_dtype type)
{
    switch (type) {
    case LMS_DTYPE_F32:
        return "f32";
    case LMS_DTYPE_F16:
        return "f16";
    case LMS_DTYPE_BF16:
        return "bf16";
    case LMS_DTYPE_Q8_0:
        return "q8_0";
    }
    return "unknown";
}

static inline float f32_from_bits(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static inline uint32_t f32_to_bits(float f)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
}

static inline float f16_to_f32(uint16_t h)
{
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & UINT32_C(0x80000000);
    const uint32_t two_w = w + w;
    /* Normals: shift the exponent/mantissa into f32 position and rebias by
     * scaling with 2^-112. */
    const uint32_t exp_offset = UINT32_C(0xE0) << 23;
    const float normalized = f32_from_bits((two_w >> 4) + exp_offset) * 0x1.0p-112f;
    /* Subnormals: place the mantissa under a 0.5 exponent and subtract 0.5. */
    const uint32_t magic_mask = UINT32_C(126) << 23;
    const float denormalized = f32_from_bits((two_w >> 17) | magic_mask) - 0.5f;
    /* An all-ones mask for subnormal inputs; a mask rather than ?: keeps the
     * loop free of control flow, which gcc would not vectorise. */
    const uint32_t is_subnormal = (uint32_t)0 - (uint32_t)(two_w < (UINT32_C(1) << 27));
    const uint32_t bits = sign | (f32_to_bits(denormalized) & is_subnormal) |
                          (f32_to_bits(normalized) & ~is_subnormal);
    return f32_from_bits(bits);
}

static void f16_run(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, sizeof h);
        dst[i] = f16_to_f32(h);
    }
}

static void bf16_run(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, src + 2 * i, sizeof h);
        dst[i] = f32_from_bits((uint32_t)h << 16);
    }
}

static void q8_0_run(const unsigned char *src, float *dst, size_t n)
{
    for (size_t b = 0; b < n / LMS_Q8_0_BLOCK; b++) {
        const unsigned char *block = src + b * LMS_Q8_0_BLOCK_BYTES;
        uint16_t scale_bits;
        memcpy(&scale_bits, block, sizeof scale_bits);
        const float scale = f16_to_f32(scale_bits);
        const int8_t *q = (const int8_t *)(block + 2);
        float *out = dst + b * LMS_Q8_0_BLOCK;
        for (int j = 0; j < LMS_Q8_0_BLOCK; j++)
            out[j] = scale * (float)q[j];
    }
}

/* Bytes that n elements occupy at the source. */
static size_t source_bytes(lms_dtype type, size_t n)
{
    switch (type) {
    case LMS_DTYPE_F32:
        return 4 * n;
    case LMS_DTYPE_F16:
    case LMS_DTYPE_BF16:
        return 2 * n;
    case LMS_DTYPE_Q8_0:
        return n / LMS_Q8_0_BLOCK * LMS_Q8_0_BLOCK_BYTES;
    }
    return 0;
}

/* A piece of one job, small enough to balance across threads. */
typedef struct {
    const lms_convert_job *job;
    size_t first, count;
} chunk;

static void convert_chunk(const chunk *c)
{
    const lms_convert_job *job = c->job;
    const unsigned char *in = (const unsigned char *)job->src + source_bytes(job->type, c->first);
    float *out = job->dst + c->first;
    switch (job->type) {
    case LMS_DTYPE_F32:
        memcpy(out, in, c->count * sizeof *out);
        break;
    case LMS_DTYPE_F16:
        f16_run(in, out, c->count);
        break;
    case LMS_DTYPE_BF16:
        bf16_run(in, out, c->count);
        break;
    case LMS_DTYPE_Q8_0:
        q8_0_run(in, out, c->count);
        break;
    }
}

lms_status lms_convert_to_f32(const lms_convert_job *jobs, size_t n_jobs, const lms_stop *stop,
                              lms_error *err)
{
    size_t n_chunks = 0;
    for (size_t j = 0; j < n_jobs; j++)
        n_chunks += (jobs[j].n + CHUNK_ELEMENTS - 1) / CHUNK_ELEMENTS;
    if (n_chunks == 0) return LMS_OK;
    chunk *chunks = malloc(n_chunks * sizeof *chunks);
    if (!chunks) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "conversion chunk table");
    size_t k = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        for (size_t first = 0; first < jobs[j].n; first += CHUNK_ELEMENTS) {
            size_t left = jobs[j].n - first;
            chunks[k++] = (chunk){&jobs[j], first, left < CHUNK_ELEMENTS ? left : CHUNK_ELEMENTS};
        }
    }
    atomic_bool stopped = false;
#pragma omp parallel for schedule(dynamic, 1) if (n_chunks > 1)
    for (size_t c = 0; c < n_chunks; c++) {
        if (atomic_load_explicit(&stopped, memory_order_relaxed)) continue;
        if (stop && stop->should_stop && stop->should_stop(stop->ctx)) {
            atomic_store_explicit(&stopped, true, memory_order_relaxed);
            continue;
        }
        convert_chunk(&chunks[c]);
    }
    free(chunks);
    if (atomic_load(&stopped))
        return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "stopped while converting the weights");
    return LMS_OK;
}
