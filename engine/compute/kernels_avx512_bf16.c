/*
 * kernels_avx512_bf16.c — the avx512-bf16 tier's block function (kernels.h):
 * BF16 projections on vdpbf16ps, everything else through matmul_panels and
 * the avx512-vnni kernels. Compiled with AVX-512 F/BW/VL/VNNI/BF16 enabled
 * for this file only; tier.c offers the tier only where the CPU has those
 * and this kernel matched its plain-C reference
 * (kernels_avx512_bf16_reference.c) at start-up.
 *
 * Which matrices: BF16 only. F16 weights stay on the avx512-vnni kernels
 * with f32 activations, bit for bit the vector tiers' result: converting
 * them to bf16 at pack would drop 3 of their 11 significant bits, a change
 * of the model's weights, not only of the rounding of x, which the contract
 * (kernels.h, docs/engine.md: bf16 activations within the precision gates)
 * does not cover and no gate here has measured; the amx tier keeps F16 exact
 * for the same reason.
 *
 * Layout: the amx tiers' k pairs (amx_bf16_at, the tier's bf16_at): element
 * (kk, j) at (kk/2)·2·LMS_PANEL + 2j + kk%2, so one pair row of a panel is
 * two zmm of 16 dwords, dword j the pair (even k low, odd k high) that
 * vdpbf16ps multiplies in lane j; for an odd k the last value follows
 * unpaired, k-major, and is read as the even half of a pair whose odd half
 * is 0. x comes as one bf16 value (bf16: hi, x rounded once) or two (bf16x2:
 * hi + lo; matmul_input.bf16_hi, _lo, zeros past k), one x pair broadcast
 * to every lane.
 *
 * Per element, kernels.h's avx512-bf16 sequence: acc = 0; per pair p of k
 * values in order, acc = vdpbf16ps(acc, hi pair, w pair), then, with two
 * values, the same with the lo pair; then y = acc, or y = y + acc. 8 rows × 2 zmm of
 * accumulators per panel; the last rows of a batch are the same kernel
 * with its spare rows repeating row 0 (not stored), so a row's bits depend
 * on that row alone.
 */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include "kernels.h"

enum { BF16_ROWS = 8 };
/* The row loops unrolled, the helpers inlined: the 16 accumulators stay
 * in registers. */
#define UNROLL _Pragma("GCC unroll 8")
#define INLINE static inline __attribute__((always_inline))
_Static_assert(LMS_PANEL == 32, "a panel is two zmm of 16 columns");

/* The first n of 16 lanes. */
INLINE __mmask16 lane_mask(int32_t n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

INLINE void store_half(float *y, __m512 v, int32_t n, kernel_mode mode)
{
    const __mmask16 m = lane_mask(n);
    if (mode == KERNEL_ACCUMULATE) v = _mm512_add_ps(_mm512_maskz_loadu_ps(m, y), v);
    _mm512_mask_storeu_ps(y, m, v);
}

INLINE __m512 dot_pair(__m512 acc, const uint16_t *x, __m512i w)
{
    int32_t pair;
    memcpy(&pair, x, sizeof pair);
    return _mm512_dpbf16_ps(acc, (__m512bh)_mm512_set1_epi32(pair), (__m512bh)w);
}

/* n_rows (≤ BF16_ROWS) rows of x (hi[i], and lo[i] with two values;
 * spare ones repeat a row) against one paired panel of k values: n_cols
 * columns of y. */
INLINE void panel_rows(const uint16_t *panel, int32_t k, const uint16_t *const *hi,
                       const uint16_t *const *lo, int values, float *y, size_t ldy, int32_t n_rows,
                       int32_t n_cols, kernel_mode mode)
{
    __m512 acc[BF16_ROWS][2];
    UNROLL for (int i = 0; i < BF16_ROWS; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    const int32_t whole = k / 2, pairs = (k + 1) / 2;
    for (int32_t p = 0; p < pairs; p++) {
        const uint16_t *row = panel + (size_t)p * 2 * LMS_PANEL;
        __m512i w0, w1;
        if (p < whole) {
            w0 = _mm512_loadu_si512(row);
            w1 = _mm512_loadu_si512(row + 2 * 16);
        } else { /* odd k: the last value, k-major, as the even half of its pair */
            w0 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)row));
            w1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)(row + 16)));
        }
        UNROLL for (int i = 0; i < BF16_ROWS; i++)
        {
            acc[i][0] = dot_pair(acc[i][0], hi[i] + 2 * p, w0);
            acc[i][1] = dot_pair(acc[i][1], hi[i] + 2 * p, w1);
            if (values == 1) continue;
            acc[i][0] = dot_pair(acc[i][0], lo[i] + 2 * p, w0);
            acc[i][1] = dot_pair(acc[i][1], lo[i] + 2 * p, w1);
        }
    }
    UNROLL for (int32_t i = 0; i < BF16_ROWS; i++) if (i < n_rows)
    {
        store_half(y + (size_t)i * ldy, acc[i][0], n_cols, mode);
        store_half(y + (size_t)i * ldy + 16, acc[i][1], n_cols - 16, mode);
    }
}

void matmul_avx512_bf16(const struct compute_tier *tier, const lms_weights *w,
                        const matmul_input *in, int32_t r0, int32_t r1, int32_t c0, int32_t c1,
                        float *y, size_t ldy, kernel_mode mode)
{
    if (w->format != LMS_WEIGHTS_BF16) {
        matmul_panels(tier, w, in, r0, r1, c0, c1, y, ldy, mode);
        return;
    }
    const int32_t k = w->k;
    const size_t stride = (size_t)kernel_bf16_stride(k);
    for (int32_t r = r0; r < r1; r += BF16_ROWS) {
        const int32_t n_rows = r1 - r < BF16_ROWS ? r1 - r : BF16_ROWS;
        const uint16_t *hi[BF16_ROWS], *lo[BF16_ROWS];
        for (int32_t i = 0; i < BF16_ROWS; i++) {
            const size_t row = (size_t)(r + (i < n_rows ? i : 0)) * stride;
            hi[i] = in->bf16_hi + row;
            lo[i] = in->bf16_lo ? in->bf16_lo + row : NULL;
        }
        for (int32_t col = c0; col < c1; col += LMS_PANEL) {
            const uint16_t *panel = w->w16 + (size_t)(col / LMS_PANEL) * k * LMS_PANEL;
            float *yc = y + (size_t)(r - r0) * ldy + (col - c0);
            const int32_t n_cols = c1 - col < LMS_PANEL ? c1 - col : LMS_PANEL;
            /* the value count a constant in each copy: no test in the loop */
            if (w->x_codes == 2)
                panel_rows(panel, k, hi, lo, 2, yc, ldy, n_rows, n_cols, mode);
            else
                panel_rows(panel, k, hi, lo, 1, yc, ldy, n_rows, n_cols, mode);
        }
    }
}
