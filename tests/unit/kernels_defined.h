/*
 * kernels_defined.h — a kernel family (compute/tier.h) as kernels.h
 * defines its arithmetic, in plain C: what a tier's harness runs in place
 * of a family whose instructions this CPU lacks (test_tier.c). The copy
 * keeps the real family's shape — its rows per call, its name, whether its
 * Q8 kernels read the 16-bit wide input — so that matmul prepares and
 * hands over exactly what it would for the real one, and only the
 * instructions change. The elementwise kernels are the generic family's
 * (plain C already). Header-only, for single-file tests.
 */
#ifndef LMS_TEST_KERNELS_DEFINED_H
#define LMS_TEST_KERNELS_DEFINED_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "half.h"
#include "kernels.h"
#include "tier.h"

/* kernels.h's dense sequence: x (n_rows pointers) against k rows of w,
 * element (kk, j) at w[kk·ldw + j], of type 0 (f32), 1 (f16) or 2 (bf16). */
static inline void defined_dense(const float *const *x, int32_t k, const void *w, size_t ldw,
                                 int type, float *y, size_t ldy, int32_t n_rows, int32_t n_cols,
                                 kernel_mode mode)
{
    for (int32_t i = 0; i < n_rows; i++)
        for (int32_t j = 0; j < n_cols; j++) {
            float *out = y + (size_t)i * ldy + j;
            float acc = mode == KERNEL_RESUME ? *out : 0.0f;
            for (int32_t kk = 0; kk < k; kk++) {
                const size_t at = (size_t)kk * ldw + (size_t)j;
                const float wv = type == 0   ? ((const float *)w)[at]
                                 : type == 1 ? lms_f16_to_f32(((const uint16_t *)w)[at])
                                             : lms_bf16_to_f32(((const uint16_t *)w)[at]);
                acc = fmaf(x[i][kk], wv, acc);
            }
            *out = mode == KERNEL_ACCUMULATE ? *out + acc : acc;
        }
}

static inline void defined_f32(const float *const *x, int32_t k, const float *w, size_t ldw,
                               float *y, size_t ldy, int32_t n_rows, int32_t n_cols,
                               kernel_mode mode)
{
    defined_dense(x, k, w, ldw, 0, y, ldy, n_rows, n_cols, mode);
}

static inline void defined_w16(const float *const *x, int32_t k, const uint16_t *panel, bool bf16,
                               float *y, size_t ldy, int32_t n_rows, int32_t n_cols,
                               kernel_mode mode)
{
    defined_dense(x, k, panel, LMS_PANEL, bf16 ? 2 : 1, y, ldy, n_rows, n_cols, mode);
}

static inline void defined_to_f16(const float *x, uint16_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = lms_f32_to_f16(isnan(x[i]) ? x[i] : fminf(fmaxf(x[i], -65504.0f), 65504.0f));
}

/* kernels.h's f16_widen_fn. */
static inline void defined_to_f32(const uint16_t *h, float *out, size_t n)
{
    for (size_t i = 0; i < n; i++)
        out[i] = lms_f16_to_f32(h[i]);
}

/* kernels.h's quantiser, codes (1 or 2) codes per value. */
static inline void defined_quantize(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                                    float *scales, int32_t *comp, int n_codes)
{
    for (int32_t b = 0; b < blocks; b++) {
        float v[LMS_Q8_BLOCK], amax = 0.0f;
        for (int i = 0; i < LMS_Q8_BLOCK; i++) {
            const int32_t at = b * LMS_Q8_BLOCK + i;
            v[i] = at < k ? x[at] : 0.0f;
            amax = fabsf(v[i]) > amax ? fabsf(v[i]) : amax; /* NaN skipped */
        }
        const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        int8_t *out = codes + (size_t)b * n_codes * LMS_Q8_BLOCK;
        int32_t sum[2] = {0, 0};
        for (int i = 0; i < LMS_Q8_BLOCK; i++) {
            float t = v[i] * id;
            t = t > -127.0f ? t : -127.0f; /* a NaN clamps to -127 */
            const float hi = nearbyintf(t < 127.0f ? t : 127.0f);
            out[i] = (int8_t)hi;
            if (n_codes == 1) {
                sum[i / 16] += (int32_t)hi;
                continue;
            }
            const float r = v[i] - hi * d;
            float u = r * (id * 128.0f);
            u = u > -127.0f ? u : -127.0f;
            const float lo = nearbyintf(u < 127.0f ? u : 127.0f);
            out[LMS_Q8_BLOCK + i] = (int8_t)lo;
            sum[i / 16] += 128 * (int32_t)hi + (int32_t)lo;
        }
        comp[2 * b] = sum[0];
        comp[2 * b + 1] = sum[1];
        scales[b] = n_codes == 1 ? d : d * 0x1p-7f;
    }
}

static inline void defined_quantize1(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                                     float *scales, int32_t *comp)
{
    defined_quantize(x, k, blocks, codes, scales, comp, 1);
}

static inline void defined_quantize2(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                                     float *scales, int32_t *comp)
{
    defined_quantize(x, k, blocks, codes, scales, comp, 2);
}

/* Activation code kk of block b of row x: from the 16-bit wide input when
 * the family's kernels read it, else from the codes. */
static inline int32_t defined_x_code(const q8_act_row *x, int32_t b, int kk, int n_codes, bool wide)
{
    if (wide) return x->wide[(size_t)b * LMS_Q8_BLOCK + kk];
    const int8_t *c = x->codes + (size_t)b * n_codes * LMS_Q8_BLOCK;
    return n_codes == 2 ? 128 * c[kk] + c[LMS_Q8_BLOCK + kk] : c[kk];
}

/* kernels.h's Q8 sequence. */
static inline void defined_q8(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                              size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode,
                              int n_codes, bool wide)
{
    const int halves = w->halves == 2 ? 2 : 1, per_half = LMS_Q8_BLOCK / halves;
    for (int32_t i = 0; i < n_rows; i++)
        for (int32_t j = 0; j < n_cols; j++) {
            float acc = 0.0f;
            for (int32_t b = 0; b < blocks; b++) {
                const size_t group = (size_t)(b / w->group_blocks) * LMS_PANEL + (size_t)j;
                const float d = lms_f16_to_f32(w->scale[group]);
                for (int h = 0; h < halves; h++) {
                    int32_t sum = 0;
                    for (int kk = h * per_half; kk < (h + 1) * per_half; kk++) {
                        const size_t at = (size_t)b * LMS_Q8_BLOCK * LMS_PANEL +
                                          (size_t)(kk / 4) * 4 * LMS_PANEL + (size_t)j * 4 +
                                          (size_t)(kk % 4);
                        sum += ((int32_t)w->codes[at] - w->bias) *
                               defined_x_code(&x[i], b, kk, n_codes, wide);
                    }
                    const int8_t *sc = halves == 2
                                           ? w->sub_scale + ((size_t)b * 2 + (size_t)h) * LMS_PANEL
                                       : w->sub_scale ? w->sub_scale + (size_t)b * LMS_PANEL
                                                      : NULL;
                    const float s = sc ? d * (float)sc[j] : d;
                    acc = fmaf((float)sum, s * x[i].scale[b], acc);
                }
                if (!w->offset) continue;
                float o = lms_f16_to_f32(w->offset[group]);
                if (w->sub_offset) o = o * (float)w->sub_offset[(size_t)b * LMS_PANEL + (size_t)j];
                acc = fmaf(o, x[i].sum[b], acc);
            }
            float *out = y + (size_t)i * ldy + j;
            *out = mode == KERNEL_ACCUMULATE ? *out + acc : acc;
        }
}

#define DEFINED_Q8(name, n_codes, wide)                                                            \
    static inline void name(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,      \
                            size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode)          \
    {                                                                                              \
        defined_q8(x, blocks, w, y, ldy, n_rows, n_cols, mode, n_codes, wide);                     \
    }
DEFINED_Q8(defined_q8_codes, 1, false)
DEFINED_Q8(defined_q8x2_codes, 2, false)
DEFINED_Q8(defined_q8x2_wide, 2, true)

static inline bool defined_runs_anywhere(const lms_cpu_features *cpu)
{
    (void)cpu;
    return true;
}

/* A family and the kernels it points to. */
typedef struct {
    kernel_family family;
    f32_kernels f32;
    w16_kernels w16;
    q8_kernels q8, q8x2;
} defined_family;

/* out: real's shape with kernels.h's arithmetic in plain C. */
static inline void define_family(const kernel_family *real, defined_family *out)
{
    out->family = *real;
    out->family.runs_on = defined_runs_anywhere;
    out->family.vec = kernel_family_generic.vec;
    out->f32 = (f32_kernels){defined_f32, real->f32->rows, real->f32->isa};
    out->family.f32 = &out->f32;
    if (real->w16) {
        out->w16 = (w16_kernels){defined_w16, real->w16->rows, real->w16->isa, defined_to_f16,
                                 defined_to_f32};
        out->family.w16 = &out->w16;
    }
    if (real->q8) {
        out->q8 =
            (q8_kernels){defined_q8_codes, real->q8->rows, real->q8->isa, defined_quantize1, false};
        out->family.q8 = &out->q8;
    }
    if (real->q8x2) {
        out->q8x2 =
            (q8_kernels){real->q8x2->wide ? defined_q8x2_wide : defined_q8x2_codes,
                         real->q8x2->rows, real->q8x2->isa, defined_quantize2, real->q8x2->wide};
        out->family.q8x2 = &out->q8x2;
    }
}

#endif
