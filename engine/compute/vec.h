/*
 * vec.h — the engine's elementwise kernels: the per-row math that is not a
 * matrix product (norms, RoPE, softmax, SwiGLU).
 *
 * Each result element is computed by the same sequence of IEEE operations
 * whatever its index (no reassociation, no contraction: the build uses
 * -ffp-contract=off), so a row's result never depends on where it sits in a
 * batch. The hot ones are compiled for x86-64-v4 (AVX-512), AVX2 and
 * baseline x86-64, chosen at load time; they are written so that the
 * compiler vectorises them without reassociating anything (reductions keep
 * fixed lanes).
 */
#ifndef LMS_VEC_H
#define LMS_VEC_H

#include <stddef.h>
#include <stdint.h>

/* y = x / rms(x) * w, rms in double. */
void vec_rmsnorm(float *y, const float *x, const float *w, int32_t n, float eps);
/* x[i] = exp(x[i] - max) for i < n; returns the sum (double). exp is a
 * polynomial accurate to ~2 ulp; exp(-inf) is exactly 0. */
double vec_exp_shifted(float *x, int32_t n, float max);
float vec_max(const float *x, int32_t n);
void vec_scale(float *x, int32_t n, float s);
/* gate[i] = silu(gate[i]) * up[i] */
void vec_swiglu(float *gate, const float *up, size_t n);
/* y += a * x */
void vec_axpy(float *y, float a, const float *x, int32_t n);
void vec_add(float *y, const float *x, int32_t n);

#endif
