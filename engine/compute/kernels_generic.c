/*
 * kernels_generic.c — the f32 micro-kernel in plain C (see kernels.h), for
 * CPUs without AVX2: the same chain of fused multiply-adds per element as
 * the vector tiers, through fmaf (exact on any CPU, fast only with FMA).
 */
#include <math.h>

#include "kernels.h"

void f32_kernel_generic(const float *const *x, int32_t k, const float *w, size_t ldw, float *y,
                        size_t ldy, int32_t n_rows, int32_t n_cols, bool resume)
{
    for (int32_t i = 0; i < n_rows; i++) {
        float *yi = y + (size_t)i * ldy;
        for (int32_t j = 0; j < n_cols; j++) {
            float acc = resume ? yi[j] : 0.0f;
            for (int32_t kk = 0; kk < k; kk++)
                acc = fmaf(x[i][kk], w[(size_t)kk * ldw + j], acc);
            yi[j] = acc;
        }
    }
}
