/*
 * vec_impl.h — the elementwise kernels of vec.h, written once in plain C
 * and compiled by each tier's kernel file for its instruction set
 * (kernels_<isa>.c includes this, then DEFINE_VEC_KERNELS). The loops are
 * written so that the compiler vectorises them without reassociating
 * anything: reductions keep VEC_LANES fixed lanes, and the build uses
 * -ffp-contract=off, so every instruction set gives the same bits.
 */
#ifndef LMS_VEC_IMPL_H
#define LMS_VEC_IMPL_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "vec.h"

/* exp(x) for x <= 0 (softmax arguments), Cephes-style: x = k ln2 + r,
 * |r| <= ln2/2, exp(r) by a degree-6 polynomial, 2^k through the exponent.
 * Branch-free so that it vectorises: k is rounded to nearest by adding
 * 1.5·2^23, and arguments below -87 (exp underflows; -inf too) are clamped
 * for the arithmetic, then give exactly 0. NaN stays NaN. */
static inline float exp_nonpositive(float x)
{
    const float round_magic = 12582912.0f;
    float xc = x > -87.0f ? x : -87.0f;
    float k = (xc * 1.44269504088896341f + round_magic) - round_magic;
    float r = xc - k * 0.693359375f;
    r = r - k * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    p = p * r * r + r + 1.0f;
    int32_t bits = ((int32_t)k + 127) << 23;
    float scale;
    memcpy(&scale, &bits, sizeof scale);
    float e = p * scale;
    return x >= -87.0f ? e : x == x ? 0.0f : x;
}

/* Folds the lanes in place, in a fixed tree. */
static double sum_lanes_double(double *acc)
{
    for (int w = VEC_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    return acc[0];
}

static void vec_rmsnorm(float *y, const float *x, const float *w, int32_t n, float eps)
{
    double acc[VEC_LANES] = {0};
    int32_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        for (int l = 0; l < VEC_LANES; l++)
            acc[l] += (double)x[i + l] * x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(sum_lanes_double(acc) / n + eps));
    for (int32_t i = 0; i < n; i++)
        y[i] = x[i] * inv * w[i];
}

static double vec_exp_shifted(float *x, int32_t n, float max)
{
    for (int32_t i = 0; i < n; i++)
        x[i] = exp_nonpositive(x[i] - max);
    double acc[VEC_LANES] = {0};
    int32_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        for (int l = 0; l < VEC_LANES; l++)
            acc[l] += x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i];
    return sum_lanes_double(acc);
}

static float vec_max(const float *x, int32_t n)
{
    float m[VEC_LANES];
    for (int l = 0; l < VEC_LANES; l++)
        m[l] = -INFINITY;
    int32_t i = 0;
    for (; i + VEC_LANES <= n; i += VEC_LANES)
        for (int l = 0; l < VEC_LANES; l++)
            m[l] = x[i + l] > m[l] ? x[i + l] : m[l];
    for (int l = 0; i < n; i++, l++)
        m[l] = x[i] > m[l] ? x[i] : m[l];
    for (int w = VEC_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            m[l] = m[l + w] > m[l] ? m[l + w] : m[l];
    return m[0];
}

static void vec_scale(float *x, int32_t n, float s)
{
    for (int32_t i = 0; i < n; i++)
        x[i] *= s;
}

static void vec_swiglu(float *gate, const float *up, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        /* silu(g) = g / (1 + exp(-g)); exp of a non-positive argument only */
        float e = exp_nonpositive(-fabsf(g));
        float sig = (g >= 0 ? 1.0f : e) / (1.0f + e); /* one division, not two behind a select */
        gate[i] = g * sig * up[i];
    }
}

static void vec_add(float *y, const float *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        y[i] += x[i];
}

/* The tier's vec_kernels, named for isa. */
#define DEFINE_VEC_KERNELS(isa)                                                                    \
    const vec_kernels vec_kernels_##isa = {vec_rmsnorm, vec_exp_shifted, vec_max,                  \
                                           vec_scale,   vec_swiglu,      vec_add}

#endif
