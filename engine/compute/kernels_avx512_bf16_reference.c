/*
 * kernels_avx512_bf16_reference.c — the avx512-bf16 tier's block function
 * with its one instruction replaced by its definition: BF16 projections in
 * plain C (kernels.h's avx512-bf16 sequence), VDPBF16PS as the Intel SDM's
 * Operation section defines it (vol. 2, VDPBF16PS); every other product
 * through matmul_panels and the tier's own family, as the real block does.
 * The tier's reference_block (tier.h): what it proves itself against at
 * start-up (tier_proof.c), and what its tests run on a CPU without
 * AVX-512 BF16.
 *
 * VDPBF16PS, per f32 lane i of srcdest and dword t of src2 (a bf16 pair;
 * bfloat16[0] the low half):
 *   srcdest.fp32[i] += make_fp32(src1.bfloat16[2i+1]) · make_fp32(t.bfloat[1])
 *   srcdest.fp32[i] += make_fp32(src1.bfloat16[2i+0]) · make_fp32(t.bfloat[0])
 * each "FP32 FMA with daz in, ftz out and RNE rounding", MXCSR neither
 * read nor written: the odd element first, each step one fused
 * multiply-add rounded once (the product of two bf16 values is exact in
 * f32: 8 + 8 significant bits, so fmaf's single rounding is the step's).
 * DAZ: an input whose exponent is 0 (a bf16 value, or srcdest) counts as a
 * zero of its sign. FTZ: a result that is subnormal after rounding becomes
 * a zero of its sign — the reading tile_emulated.c takes for TDPBF16PS;
 * it differs from MXCSR.FTZ (tininess after rounding to 24 bits with an
 * unbounded exponent) only for exact results within 2^-150 below 2^-126,
 * which no product of the self-check's values reaches. The SDM defines
 * the sequence exactly, so the kernel must give these bits; NaN payloads
 * (its Table 5-1 orders them) are not modelled: the self-check multiplies
 * no NaN. tests/unit/test_avx512_bf16_reference.c checks the step against
 * the CPU's own fused multiply-add under MXCSR DAZ and FTZ.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* make_fp32 with DAZ. */
static float bf16_in(uint32_t h)
{
    if (!(h & 0x7F80)) h &= 0x8000;
    return bits_f32(h << 16);
}

/* An f32 input with DAZ, or a result with FTZ. */
static float flush(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return (u & 0x7F800000) ? x : bits_f32(u & 0x80000000);
}

float kernel_vdpbf16ps_lane(float acc, uint32_t a, uint32_t b)
{
    acc = flush(fmaf(bf16_in(a >> 16), bf16_in(b >> 16), flush(acc)));
    return flush(fmaf(bf16_in(a & 0xFFFF), bf16_in(b & 0xFFFF), acc));
}

/* A bf16 pair as a dword: the even k value low, the odd one high. */
static uint32_t pair(uint16_t even, uint16_t odd)
{
    return (uint32_t)odd << 16 | even;
}

void matmul_avx512_bf16_reference(const struct compute_tier *tier, const lms_weights *w,
                                  const matmul_input *in, int32_t r0, int32_t r1, int32_t c0,
                                  int32_t c1, float *y, size_t ldy, kernel_mode mode)
{
    if (w->format != LMS_WEIGHTS_BF16) {
        matmul_panels(tier, w, in, r0, r1, c0, c1, y, ldy, mode);
        return;
    }
    const int32_t k = w->k, pairs = (k + 1) / 2;
    const size_t stride = (size_t)kernel_bf16_stride(k);
    for (int32_t r = r0; r < r1; r++) {
        const uint16_t *hi = in->bf16_hi + (size_t)r * stride,
                       *lo = w->x_codes == 2 ? in->bf16_lo + (size_t)r * stride : NULL;
        for (int32_t c = c0; c < c1; c++) {
            const uint16_t *panel = w->w16 + (size_t)(c / LMS_PANEL) * k * LMS_PANEL;
            const int32_t j = c % LMS_PANEL;
            float acc = 0.0f;
            for (int32_t p = 0; p < pairs; p++) {
                const int32_t kk = 2 * p;
                const uint32_t wp = pair(panel[lms_weights_w16_at(w, kk, j)],
                                         kk + 1 < k ? panel[lms_weights_w16_at(w, kk + 1, j)] : 0);
                acc = kernel_vdpbf16ps_lane(acc, pair(hi[kk], hi[kk + 1]), wp);
                if (lo) acc = kernel_vdpbf16ps_lane(acc, pair(lo[kk], lo[kk + 1]), wp);
            }
            float *out = y + (size_t)(r - r0) * ldy + (c - c0);
            *out = mode == KERNEL_ACCUMULATE ? *out + acc : acc;
        }
    }
}
