/*
 * vec.h — the engine's elementwise kernels: the per-row math that is not a
 * matrix product (norms, RoPE, softmax, SwiGLU).
 *
 * Each result element is computed by the same sequence of IEEE operations
 * whatever its index (no reassociation, no contraction: the build uses
 * -ffp-contract=off), so a row's result never depends on where it sits in a
 * batch. They come with each compute tier (tier.h: compiled for its
 * instruction set, vec_impl.h), all giving the same bits.
 */
#ifndef LMS_VEC_H
#define LMS_VEC_H

#include <stddef.h>
#include <stdint.h>

/* The reductions (vec_rmsnorm's sum of squares, vec_exp_shifted's sum,
 * vec_max) keep VEC_LANES partial results: element i goes to lane
 * i % VEC_LANES, each lane takes its elements in index order, and the lanes
 * are folded in a fixed tree (lane l combines with lane l + w for w =
 * VEC_LANES/2, ..., 1). A result is thus a function of n and the values in
 * order, the same at any address and in every clone; moving a value to
 * another lane may change its last bits. */
#define VEC_LANES 16

typedef struct {
    /* y = x / rms(x) * w, rms in double. */
    void (*rmsnorm)(float *y, const float *x, const float *w, int32_t n, float eps);
    /* x[i] = exp(x[i] - max) for i < n; returns the sum (double). exp is a
     * polynomial accurate to ~2 ulp; exp(-inf) is exactly 0. */
    double (*exp_shifted)(float *x, int32_t n, float max);
    /* The largest element; NaN elements are skipped, -inf when there is none. */
    float (*max)(const float *x, int32_t n);
    void (*scale)(float *x, int32_t n, float s);
    /* gate[i] = silu(gate[i]) * up[i] */
    void (*swiglu)(float *gate, const float *up, size_t n);
    void (*add)(float *y, const float *x, int32_t n);
} vec_kernels;

#endif
