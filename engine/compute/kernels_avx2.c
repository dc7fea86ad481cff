/*
 * kernels_avx2.c — the AVX2 tier's kernels (kernels.h): the floor every
 * low-precision path runs on (x86-64-v3: AVX2, FMA, F16C). Compiled with
 * those enabled for this file only.
 *
 * f32 and 16-bit: kernels_common.h's dense kernels, a panel in two passes
 * of 16 columns (2 vectors), 6 rows. Q8: a panel in four slices of 8
 * columns, 4 rows, the block (or half-block) sums exact in 32-bit lanes
 * by vpmaddubsw and vpmaddwd (q8_sums); the sums and the f32 steps are
 * those of the AVX-512 kernels, element for element.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Lanes [0, n) of 8 set (all when n >= 8, none when n <= 0). */
static inline __m256i lane_mask(int32_t n)
{
    const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), index);
}

#define VL 8
typedef __m256 vf;
#define vf_zero()         _mm256_setzero_ps()
#define vf_set1(s)        _mm256_set1_ps(s)
#define vf_fma(a, b, c)   _mm256_fmadd_ps(a, b, c)
#define vf_add(a, b)      _mm256_add_ps(a, b)
#define vf_loadu(p)       _mm256_loadu_ps(p)
#define vf_load(p, n)     _mm256_maskload_ps(p, lane_mask(n))
#define vf_store(p, v, n) _mm256_maskstore_ps(p, lane_mask(n), v)
#define vf_min(a, b)      _mm256_min_ps(a, b)
#define vf_max(a, b)      _mm256_max_ps(a, b)
#define DENSE_ROWS        6

static inline __m256 vf_load_w16(const uint16_t *p, bool bf16)
{
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (bf16) return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
    return _mm256_cvtph_ps(h);
}

static inline void store_f16(uint16_t *p, __m256 v, int32_t n)
{
    const __m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    if (n >= 8)
        _mm_storeu_si128((__m128i *)p, h);
    else
        memcpy(p, &h, (size_t)n * sizeof *p);
}

#define vf_store_f16(p, v, n) store_f16(p, v, n)

#include "kernels_common.h"
#include "vec_impl.h"

DEFINE_F32_KERNELS(avx2);
DEFINE_VEC_KERNELS(avx2);
DEFINE_W16_KERNELS(avx2);

/* 8 int32 codes in [-127, 127] as 8 bytes. */
static inline void store_codes(int8_t *out, __m256i q)
{
    const __m128i q16 = _mm_packs_epi32(_mm256_castsi256_si128(q), _mm256_extracti128_si256(q, 1));
    _mm_storel_epi64((__m128i *)out, _mm_packs_epi16(q16, q16));
}

enum { Q8_R = 4 };

/* 8 int8 as f32. */
INLINE __m256 widen_i8(const int8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* Per row, the exact sums of code_w · x_code over groups [g0, g1) of block
 * b, for the 8 columns of a slice in column order (wb: the slice's bytes,
 * code_w + bias, in the block; comp[i]: x's code sum over those groups).
 *
 * One code (x_code = hi), bias 128: vpmaddubsw of |code_w| by hi signed by
 * code_w (|code_w| ≤ 128, |hi| ≤ 127: no saturation), vpmaddwd by ones: a
 * column's 4 products per lane; a loop over the groups, not unrolled: gcc
 * reassociates an unrolled chain of integer adds into a tree whose partial
 * sums spill out of the 16 ymm registers. Small bias (bytes below 64):
 * vpmaddubsw of the bytes by hi, two groups' pairs added in 16 bits (2 · 2 ·
 * 63 · 127 < 2^15), then vpmaddwd by ones. Two codes (x_code = 128 · hi +
 * lo, as 16-bit words): vpmaddwd against the bytes widened, 2 columns'
 * halves per lane put back in column order. Both start at -bias × comp
 * (integer additions are exact in any order). */
INLINE void q8_sums(const q8_act_row *x, const uint8_t *wb, int32_t b, int g0, int g1, int codes,
                    int32_t bias, const int32_t *comp, __m256i sums[Q8_R])
{
    const __m256i ones = _mm256_set1_epi16(1);
    if (codes == 1 && bias == 128) {
        UNROLL for (int i = 0; i < Q8_R; i++) sums[i] = _mm256_setzero_si256();
        const __m256i flip = _mm256_set1_epi8((char)0x80);
        _Pragma("GCC unroll 1") for (int g = g0; g < g1; g++)
        {
            const __m256i w = _mm256_xor_si256(
                _mm256_loadu_si256((const __m256i *)(wb + g * 4 * LMS_PANEL)), flip);
            const __m256i w_abs = _mm256_abs_epi8(w);
            UNROLL for (int i = 0; i < Q8_R; i++)
            {
                int32_t quad;
                memcpy(&quad, x[i].codes + (size_t)b * LMS_Q8_BLOCK + 4 * g, sizeof quad);
                const __m256i xs = _mm256_sign_epi8(_mm256_set1_epi32(quad), w);
                sums[i] = _mm256_add_epi32(
                    sums[i], _mm256_madd_epi16(_mm256_maddubs_epi16(w_abs, xs), ones));
            }
        }
        return;
    }
    UNROLL for (int i = 0; i < Q8_R; i++) sums[i] = _mm256_set1_epi32(-bias * comp[i]);
    if (codes == 1) {
        _Pragma("GCC unroll 1") for (int g = g0; g < g1; g += 2)
        {
            const __m256i w0 = _mm256_loadu_si256((const __m256i *)(wb + g * 4 * LMS_PANEL));
            const __m256i w1 = _mm256_loadu_si256((const __m256i *)(wb + (g + 1) * 4 * LMS_PANEL));
            UNROLL for (int i = 0; i < Q8_R; i++)
            {
                int32_t quad[2];
                memcpy(quad, x[i].codes + (size_t)b * LMS_Q8_BLOCK + 4 * g, sizeof quad);
                const __m256i pairs =
                    _mm256_add_epi16(_mm256_maddubs_epi16(w0, _mm256_set1_epi32(quad[0])),
                                     _mm256_maddubs_epi16(w1, _mm256_set1_epi32(quad[1])));
                sums[i] = _mm256_add_epi32(sums[i], _mm256_madd_epi16(pairs, ones));
            }
        }
    } else {
        __m256i lo[Q8_R], hi[Q8_R]; /* columns 0-3 and 4-7 of the slice, per k pair */
        UNROLL for (int i = 0; i < Q8_R; i++) lo[i] = hi[i] = _mm256_setzero_si256();
        _Pragma("GCC unroll 2") for (int g = g0; g < g1; g++)
        {
            const __m256i w = _mm256_loadu_si256((const __m256i *)(wb + g * 4 * LMS_PANEL));
            const __m256i w_lo = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(w));
            const __m256i w_hi = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(w, 1));
            UNROLL for (int i = 0; i < Q8_R; i++)
            {
                /* the 4 values' 15-bit codes 128 · hi + lo, as 16-bit words */
                int64_t quad;
                memcpy(&quad, x[i].wide + (size_t)b * LMS_Q8_BLOCK + 4 * g, sizeof quad);
                const __m256i xb = _mm256_set1_epi64x(quad);
                lo[i] = _mm256_add_epi32(lo[i], _mm256_madd_epi16(w_lo, xb));
                hi[i] = _mm256_add_epi32(hi[i], _mm256_madd_epi16(w_hi, xb));
            }
        }
        /* [c0 c1 c4 c5 | c2 c3 c6 c7] back to column order */
        UNROLL for (int i = 0; i < Q8_R; i++) sums[i] = _mm256_add_epi32(
            sums[i], _mm256_permute4x64_epi64(_mm256_hadd_epi32(lo[i], hi[i]), 0xD8));
    }
}

/* The sums over groups [g0, g1) of block b, scaled by D · sc (sc: the
 * slice's sub-scales for them, or NULL for 1): acc = fma(sum, s ·
 * scale_x[b], acc) per row. */
INLINE void q8_part(__m256 acc[Q8_R], const q8_act_row *x, int32_t b, const uint8_t *wb, int g0,
                    int g1, int codes, int32_t bias, const int32_t *comp, __m256 d,
                    const int8_t *sc)
{
    __m256i sums[Q8_R];
    q8_sums(x, wb, b, g0, g1, codes, bias, comp, sums);
    const __m256 s = sc ? _mm256_mul_ps(d, widen_i8(sc)) : d;
    UNROLL for (int i = 0; i < Q8_R; i++) acc[i] = _mm256_fmadd_ps(
        _mm256_cvtepi32_ps(sums[i]), _mm256_mul_ps(s, _mm256_set1_ps(x[i].scale[b])), acc[i]);
}

/* kernels.h's Q8 sequence with codes (1 or 2) codes per activation value.
 * q8_0: the matrix has D per block and nothing else (Q8_0 and float
 * weights), so that the loop is compiled without the other layouts'
 * steps and tests. */
INLINE void q8_loop(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y, size_t ldy,
                    int32_t n_rows, int32_t n_cols, kernel_mode mode, int codes, bool q8_0)
{
    for (int slice = 0; slice < LMS_PANEL / 8; slice++) {
        __m256 acc[Q8_R];
        UNROLL for (int i = 0; i < Q8_R; i++) acc[i] = _mm256_setzero_ps();
        for (int32_t b = 0; b < blocks; b++) {
            const uint8_t *wb = w->codes + (size_t)b * LMS_Q8_BLOCK * LMS_PANEL + 32 * slice;
            const size_t group = (size_t)(q8_0 ? b : b / w->group_blocks) * LMS_PANEL + 8 * slice;
            const __m256 d = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w->scale + group)));
            int32_t comp[2][Q8_R], whole[Q8_R];
            UNROLL for (int i = 0; i < Q8_R; i++)
            {
                comp[0][i] = x[i].comp[2 * b];
                comp[1][i] = x[i].comp[2 * b + 1];
                whole[i] = comp[0][i] + comp[1][i];
            }
            if (!q8_0 && w->halves == 2) {
                const int8_t *sc = w->sub_scale + (size_t)b * 2 * LMS_PANEL + 8 * slice;
                q8_part(acc, x, b, wb, 0, 4, codes, w->bias, comp[0], d, sc);
                q8_part(acc, x, b, wb, 4, 8, codes, w->bias, comp[1], d, sc + LMS_PANEL);
            } else {
                q8_part(acc, x, b, wb, 0, 8, codes, w->bias, whole, d,
                        !q8_0 && w->sub_scale ? w->sub_scale + (size_t)b * LMS_PANEL + 8 * slice
                                              : NULL);
            }
            if (q8_0 || !w->offset) continue;
            __m256 o = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(w->offset + group)));
            if (w->sub_offset)
                o = _mm256_mul_ps(o, widen_i8(w->sub_offset + (size_t)b * LMS_PANEL + 8 * slice));
            UNROLL for (int i = 0; i < Q8_R; i++) acc[i] =
                _mm256_fmadd_ps(o, _mm256_set1_ps(x[i].sum[b]), acc[i]);
        }
        UNROLL for (int i = 0; i < Q8_R; i++) if (i < n_rows)
        {
            float *yi = y + (size_t)i * ldy + 8 * slice;
            const int32_t n = n_cols - 8 * slice;
            vf_store(yi, mode == KERNEL_ACCUMULATE ? vf_add(vf_load(yi, n), acc[i]) : acc[i], n);
        }
    }
}

INLINE void q8_kernel(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y, size_t ldy,
                      int32_t n_rows, int32_t n_cols, kernel_mode mode, int codes)
{
    /* a literal flag in each call, so that each is its own loop */
    if (q8_panel_plain(w))
        q8_loop(x, blocks, w, y, ldy, n_rows, n_cols, mode, codes, true);
    else
        q8_loop(x, blocks, w, y, ldy, n_rows, n_cols, mode, codes, false);
}

/* kernels.h's quantiser with codes (1 or 2) codes per value. */
INLINE void q8_quantize(const float *x, int32_t k, int32_t blocks, int8_t *codes, float *scales,
                        int32_t *comp, int codes_per_value)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    for (int32_t b = 0; b < blocks; b++) {
        const int32_t first = b * LMS_Q8_BLOCK;
        __m256 v[4];
        __m256 m = _mm256_setzero_ps();
        for (int h = 0; h < 4; h++) {
            v[h] = _mm256_maskload_ps(x + first + 8 * h, lane_mask(k - first - 8 * h));
            /* max(|v|, m) keeps m where v is NaN */
            m = _mm256_max_ps(_mm256_andnot_ps(sign, v[h]), m);
        }
        __m128 m4 = _mm_max_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
        m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
        const float d = _mm_cvtss_f32(m4) / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        const __m256 vd = _mm256_set1_ps(d), vid = _mm256_set1_ps(id);
        const __m256 vid128 = _mm256_set1_ps(id * 128.0f);
        __m256i sum[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()}; /* per half */
        int8_t *out = codes + (size_t)b * codes_per_value * LMS_Q8_BLOCK;
        for (int h = 0; h < 4; h++) {
            /* max(t, -127) is -127 where t is NaN */
            const __m256 t = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(v[h], vid), lo), hi);
            const __m256 qh = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            const __m256i qhi = _mm256_cvtps_epi32(qh);
            store_codes(out + 8 * h, qhi);
            if (codes_per_value == 1) {
                sum[h / 2] = _mm256_add_epi32(sum[h / 2], qhi);
                continue;
            }
            const __m256 r = _mm256_sub_ps(v[h], _mm256_mul_ps(qh, vd));
            const __m256 u = _mm256_min_ps(_mm256_max_ps(_mm256_mul_ps(r, vid128), lo), hi);
            const __m256i qlo = _mm256_cvtps_epi32(
                _mm256_round_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
            store_codes(out + LMS_Q8_BLOCK + 8 * h, qlo);
            sum[h / 2] =
                _mm256_add_epi32(sum[h / 2], _mm256_add_epi32(_mm256_slli_epi32(qhi, 7), qlo));
        }
        for (int half = 0; half < 2; half++) {
            __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sum[half]),
                                       _mm256_extracti128_si256(sum[half], 1));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4E));
            s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xB1));
            comp[2 * b + half] = _mm_cvtsi128_si32(s4);
        }
        scales[b] = codes_per_value == 1 ? d : d * 0x1p-7f;
    }
}

static void q8_kernel_avx2(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                           size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode)
{
    q8_kernel(x, blocks, w, y, ldy, n_rows, n_cols, mode, 1);
}

static void q8x2_kernel_avx2(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                             size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode)
{
    q8_kernel(x, blocks, w, y, ldy, n_rows, n_cols, mode, 2);
}

static void q8_quantize_avx2(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                             float *scales, int32_t *comp)
{
    q8_quantize(x, k, blocks, codes, scales, comp, 1);
}

static void q8x2_quantize_avx2(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                               float *scales, int32_t *comp)
{
    q8_quantize(x, k, blocks, codes, scales, comp, 2);
}

const q8_kernels q8_kernels_avx2 = {q8_kernel_avx2, Q8_R, "avx2", q8_quantize_avx2, false};
const q8_kernels q8x2_kernels_avx2 = {q8x2_kernel_avx2, Q8_R, "avx2", q8x2_quantize_avx2, true};
