/*
 * vec.c — elementwise kernels (see vec.h).
 */
#include "vec.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* AVX2 and baseline clones of the hot loops (ifunc-dispatched) with GCC;
 * plain functions with clang 14 (whose clones do not link from a static
 * library) and under the sanitizers. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) &&                             \
    !defined(__SANITIZE_ADDRESS__)
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif

void vec_rmsnorm(float *y, const float *x, const float *w, int32_t n, float eps)
{
    double ss = 0.0;
    for (int32_t i = 0; i < n; i++)
        ss += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(ss / n + eps));
    for (int32_t i = 0; i < n; i++)
        y[i] = x[i] * inv * w[i];
}

/* exp(x) for x <= 0 (softmax arguments), Cephes-style: x = k ln2 + r,
 * |r| <= ln2/2, exp(r) by a degree-6 polynomial, 2^k through the exponent. */
static inline float exp_nonpositive(float x)
{
    if (x < -87.0f) return 0.0f; /* also -inf; exp(-87) is subnormal-adjacent */
    float k = floorf(x * 1.44269504088896341f + 0.5f);
    float r = x - k * 0.693359375f;
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
    return p * scale;
}

HOT double vec_exp_shifted(float *x, int32_t n, float max)
{
    for (int32_t i = 0; i < n; i++)
        x[i] = exp_nonpositive(x[i] - max);
    double sum = 0.0;
    for (int32_t i = 0; i < n; i++)
        sum += x[i];
    return sum;
}

HOT float vec_max(const float *x, int32_t n)
{
    float m = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        m = x[i] > m ? x[i] : m;
    return m;
}

HOT void vec_scale(float *x, int32_t n, float s)
{
    for (int32_t i = 0; i < n; i++)
        x[i] *= s;
}

HOT void vec_swiglu(float *gate, const float *up, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        float g = gate[i];
        /* silu(g) = g / (1 + exp(-g)); exp of a non-positive argument only */
        float e = exp_nonpositive(-fabsf(g));
        float sig = g >= 0 ? 1.0f / (1.0f + e) : e / (1.0f + e);
        gate[i] = g * sig * up[i];
    }
}

HOT void vec_axpy(float *y, float a, const float *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

void vec_add(float *y, const float *x, int32_t n)
{
    for (int32_t i = 0; i < n; i++)
        y[i] += x[i];
}
