/*
 * half.h — f16 and bf16 <-> f32, for the conversion and packing loops.
 * Widening is exact; narrowing rounds to nearest, ties to even, as ggml's
 * and PyTorch's conversions do (NaN stays a quiet NaN, overflow gives
 * infinity).
 *
 * The f16 conversion is the branch-free bit manipulation from Maratyszcza's
 * FP16 library (the one ggml uses without F16C): it handles normals,
 * subnormals, zeros, infinities and NaNs with integer and float arithmetic
 * only, so loops over it vectorise without needing F16C.
 */
#ifndef LMS_HALF_H
#define LMS_HALF_H

#include <stdint.h>
#include <string.h>

static inline float lms_f32_from_bits(uint32_t w)
{
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}

static inline uint32_t lms_f32_to_bits(float f)
{
    uint32_t w;
    memcpy(&w, &f, sizeof w);
    return w;
}

static inline float lms_f16_to_f32(uint16_t h)
{
    const uint32_t w = (uint32_t)h << 16;
    const uint32_t sign = w & UINT32_C(0x80000000);
    const uint32_t two_w = w + w;
    /* Normals: shift the exponent/mantissa into f32 position and rebias by
     * scaling with 2^-112. */
    const uint32_t exp_offset = UINT32_C(0xE0) << 23;
    const float normalized = lms_f32_from_bits((two_w >> 4) + exp_offset) * 0x1.0p-112f;
    /* Subnormals: place the mantissa under a 0.5 exponent and subtract 0.5. */
    const uint32_t magic_mask = UINT32_C(126) << 23;
    const float denormalized = lms_f32_from_bits((two_w >> 17) | magic_mask) - 0.5f;
    /* An all-ones mask for subnormal inputs; a mask rather than ?: keeps the
     * loop free of control flow, which gcc would not vectorise. */
    const uint32_t is_subnormal = (uint32_t)0 - (uint32_t)(two_w < (UINT32_C(1) << 27));
    const uint32_t bits = sign | (lms_f32_to_bits(denormalized) & is_subnormal) |
                          (lms_f32_to_bits(normalized) & ~is_subnormal);
    return lms_f32_from_bits(bits);
}

static inline uint16_t lms_f32_to_f16(float f)
{
    /* Scaling by 2^112 then 2^-110 lets the FPU round the mantissa (to
     * nearest even) at the f16 precision of the value's exponent, including
     * subnormals; the bias trick then extracts the rounded bits. */
    const float scale_to_inf = 0x1.0p+112f, scale_to_zero = 0x1.0p-110f;
    const uint32_t w = lms_f32_to_bits(f);
    float base = (lms_f32_from_bits(w & UINT32_C(0x7FFFFFFF)) * scale_to_inf) * scale_to_zero;
    const uint32_t shl1_w = w + w;
    const uint32_t sign = w & UINT32_C(0x80000000);
    uint32_t bias = shl1_w & UINT32_C(0xFF000000);
    if (bias < UINT32_C(0x71000000)) bias = UINT32_C(0x71000000);
    base = lms_f32_from_bits((bias >> 1) + UINT32_C(0x07800000)) + base;
    const uint32_t bits = lms_f32_to_bits(base);
    const uint32_t exp_bits = (bits >> 13) & UINT32_C(0x00007C00);
    const uint32_t mantissa_bits = bits & UINT32_C(0x00000FFF);
    const uint32_t nonsign = exp_bits + mantissa_bits;
    return (uint16_t)((sign >> 16) |
                      (shl1_w > UINT32_C(0xFF000000) ? UINT16_C(0x7E00) : (uint16_t)nonsign));
}

static inline float lms_bf16_to_f32(uint16_t h)
{
    return lms_f32_from_bits((uint32_t)h << 16);
}

static inline uint16_t lms_f32_to_bf16(float f)
{
    const uint32_t w = lms_f32_to_bits(f);
    if ((w & UINT32_C(0x7FFFFFFF)) > UINT32_C(0x7F800000)) /* NaN: keep it quiet */
        return (uint16_t)((w >> 16) | UINT32_C(0x0040));
    return (uint16_t)((w + UINT32_C(0x7FFF) + ((w >> 16) & 1)) >> 16);
}

/* A little-endian u16 at any byte address. */
static inline uint16_t lms_load_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

#endif
