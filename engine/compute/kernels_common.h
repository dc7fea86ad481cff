/*
 * kernels_common.h — what every tier's kernel file shares: its macros, and
 * the dense kernels (f32 and 16-bit weights, kernels.h) written once over
 * the SIMD mapping the including file defines. Included by kernels_*.c
 * only, after that mapping:
 *
 *   VL                       lanes per vector
 *   vf                       a vector of VL floats
 *   vf_zero(), vf_set1(s)    all lanes 0, or s
 *   vf_fma(a, b, c)          a · b + c, rounded once
 *   vf_add(a, b)             a + b
 *   vf_loadu(p)              VL floats from p
 *   vf_load(p, n)            lanes [0, n) from p (only those are read), the
 *                            others 0; n may be ≤ 0 or ≥ VL
 *   vf_store(p, v, n)        lanes [0, n) of v to p (only those are written)
 *   vf_load_w16(p, bf16)     VL f16 or bf16 values from p, widened (exact)
 *   DENSE_ROWS               rows per call of the dense kernels
 *
 * and, for the 16-bit kernels (DEFINE_W16_KERNELS):
 *
 *   vf_min(a, b), vf_max     lane-wise, b where a is NaN
 *   vf_store_f16(p, v, n)    lanes [0, n) of v as f16 (vcvtps2ph, nearest
 *                            even) to p
 *
 * A pass covers 2·VL columns with DENSE_ROWS × 2 accumulators, one
 * broadcast x value per row and k: on every tier, kernels.h's chain of
 * fused multiply-adds per element.
 */
#ifndef LMS_KERNELS_COMMON_H
#define LMS_KERNELS_COMMON_H

#include "half.h"
#include "kernels.h"

#define UNROLL _Pragma("GCC unroll 8")
/* The kernels' helpers must be inlined for the accumulators to stay in
 * registers. */
#define INLINE static inline __attribute__((always_inline))

typedef enum { DENSE_F32, DENSE_F16, DENSE_BF16 } dense_weights;

/* kernels.h's dense sequence for n_rows ≤ DENSE_ROWS rows over n_cols ≤
 * LMS_PANEL columns: w f32 with row stride ldw (DENSE_F32), or a packed
 * 16-bit panel; all LMS_PANEL columns of w are read, only n_cols stored. */
INLINE void dense_kernel(const float *const *x, int32_t k, const void *w, size_t ldw,
                         dense_weights type, float *y, size_t ldy, int32_t n_rows, int32_t n_cols,
                         kernel_mode mode)
{
    for (int32_t c0 = 0; c0 < n_cols; c0 += 2 * VL) {
        const int32_t n0 = n_cols - c0, n1 = n_cols - c0 - VL;
        vf acc[DENSE_ROWS][2];
        UNROLL for (int i = 0; i < DENSE_ROWS; i++)
        {
            const float *yi = y + (size_t)(i < n_rows ? i : 0) * ldy + c0;
            acc[i][0] = mode == KERNEL_RESUME ? vf_load(yi, n0) : vf_zero();
            acc[i][1] = mode == KERNEL_RESUME ? vf_load(yi + VL, n1) : vf_zero();
        }
        for (int32_t kk = 0; kk < k; kk++) {
            vf w0, w1;
            if (type == DENSE_F32) {
                const float *wk = (const float *)w + (size_t)kk * ldw + c0;
                w0 = vf_loadu(wk);
                w1 = vf_loadu(wk + VL);
            } else {
                const uint16_t *wk = (const uint16_t *)w + (size_t)kk * LMS_PANEL + c0;
                w0 = vf_load_w16(wk, type == DENSE_BF16);
                w1 = vf_load_w16(wk + VL, type == DENSE_BF16);
            }
            UNROLL for (int i = 0; i < DENSE_ROWS; i++)
            {
                const vf xb = vf_set1(x[i][kk]);
                acc[i][0] = vf_fma(xb, w0, acc[i][0]);
                acc[i][1] = vf_fma(xb, w1, acc[i][1]);
            }
        }
        UNROLL for (int i = 0; i < DENSE_ROWS; i++) if (i < n_rows)
        {
            float *yi = y + (size_t)i * ldy + c0;
            if (mode == KERNEL_ACCUMULATE) {
                acc[i][0] = vf_add(vf_load(yi, n0), acc[i][0]);
                acc[i][1] = vf_add(vf_load(yi + VL, n1), acc[i][1]);
            }
            vf_store(yi, acc[i][0], n0);
            vf_store(yi + VL, acc[i][1], n1);
        }
    }
}

/* The tier's f32 kernel and descriptor, named for isa. */
#define DEFINE_F32_KERNELS(isa)                                                                    \
    static void f32_kernel_##isa(const float *const *x, int32_t k, const float *w, size_t ldw,     \
                                 float *y, size_t ldy, int32_t n_rows, int32_t n_cols,             \
                                 kernel_mode mode)                                                 \
    {                                                                                              \
        dense_kernel(x, k, w, ldw, DENSE_F32, y, ldy, n_rows, n_cols, mode);                       \
    }                                                                                              \
    const f32_kernels f32_kernels_##isa = {f32_kernel_##isa, DENSE_ROWS, #isa}

#ifdef vf_store_f16
/* kernels.h's f16_pack_fn. */
INLINE void pack_f16(const float *x, uint16_t *out, size_t n)
{
    const vf top = vf_set1(65504.0f), bottom = vf_set1(-65504.0f);
    for (size_t i = 0; i < n; i += VL) {
        const int32_t left = n - i < (size_t)VL ? (int32_t)(n - i) : VL;
        /* constants first: a NaN lane stays NaN */
        vf_store_f16(out + i, vf_max(bottom, vf_min(top, vf_load(x + i, left))), left);
    }
}

/* kernels.h's f16_widen_fn: whole vectors, then the rest one by one. */
INLINE void widen_f16(const uint16_t *h, float *out, size_t n)
{
    size_t i = 0;
    for (; i + VL <= n; i += VL)
        vf_store(out + i, vf_load_w16(h + i, false), VL);
    for (; i < n; i++)
        out[i] = lms_f16_to_f32(h[i]);
}
#endif

/* The tier's 16-bit kernels and descriptor, named for isa. */
#define DEFINE_W16_KERNELS(isa)                                                                    \
    static void w16_kernel_##isa(const float *const *x, int32_t k, const uint16_t *panel,          \
                                 bool bf16, float *y, size_t ldy, int32_t n_rows, int32_t n_cols,  \
                                 kernel_mode mode)                                                 \
    {                                                                                              \
        if (bf16)                                                                                  \
            dense_kernel(x, k, panel, LMS_PANEL, DENSE_BF16, y, ldy, n_rows, n_cols, mode);        \
        else                                                                                       \
            dense_kernel(x, k, panel, LMS_PANEL, DENSE_F16, y, ldy, n_rows, n_cols, mode);         \
    }                                                                                              \
    static void pack_f16_##isa(const float *x, uint16_t *out, size_t n)                            \
    {                                                                                              \
        pack_f16(x, out, n);                                                                       \
    }                                                                                              \
    static void widen_f16_##isa(const uint16_t *h, float *out, size_t n)                           \
    {                                                                                              \
        widen_f16(h, out, n);                                                                      \
    }                                                                                              \
    const w16_kernels w16_kernels_##isa = {w16_kernel_##isa, DENSE_ROWS, #isa, pack_f16_##isa,     \
                                           widen_f16_##isa}

#endif
