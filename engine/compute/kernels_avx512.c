/*
 * kernels_avx512.c — the AVX-512 tier's kernels (kernels.h). Compiled with
 * AVX-512 F/BW/VL/VNNI enabled for this file only; tier.c offers them only
 * where the CPU has those.
 *
 * f32 and 16-bit: kernels_common.h's dense kernels, a panel's 32 columns
 * as two 16-lane vectors, 8 rows. Q8: 4 rows × 2 vectors of int32 block
 * (or half-block) sums (vpdpbusd: the weights' code + bias as the unsigned
 * operand, x's codes as the signed one, the sum started at -bias × x's
 * code sum so that it ends as the exact sum of code_w · code_x), and 4 × 2
 * f32 accumulators that take each sum times its scales, then the offset
 * times x's block sum: per block of 32, 64 vpdpbusd and 16 f32 steps (8
 * products D · scale_x, 8 fma), which share the FMA ports with vpdpbusd
 * where zmm runs on 256-bit halves (Zen 4: at most 64 / 80 of its peak).
 * The quantiser works 16 blocks at a time.
 */
#include <immintrin.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* The first n of 16 lanes. */
static inline __mmask16 lane_mask(int32_t n)
{
    return n >= 16 ? 0xFFFF : n <= 0 ? 0 : (__mmask16)((1u << n) - 1);
}

#define VL 16
typedef __m512 vf;
#define vf_zero()         _mm512_setzero_ps()
#define vf_set1(s)        _mm512_set1_ps(s)
#define vf_fma(a, b, c)   _mm512_fmadd_ps(a, b, c)
#define vf_add(a, b)      _mm512_add_ps(a, b)
#define vf_loadu(p)       _mm512_loadu_ps(p)
#define vf_load(p, n)     _mm512_maskz_loadu_ps(lane_mask(n), p)
#define vf_store(p, v, n) _mm512_mask_storeu_ps(p, lane_mask(n), v)
#define vf_min(a, b)      _mm512_min_ps(a, b)
#define vf_max(a, b)      _mm512_max_ps(a, b)
#define DENSE_ROWS        8

static inline __m512 vf_load_w16(const uint16_t *p, bool bf16)
{
    __m256i h = _mm256_loadu_si256((const __m256i *)p);
    if (bf16) return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    return _mm512_cvtph_ps(h);
}

static inline void store_f16(uint16_t *p, __m512 v, int32_t n)
{
    const __m256i h = _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT);
    if (n >= 16)
        _mm256_storeu_si256((__m256i *)p, h);
    else
        memcpy(p, &h, (size_t)n * sizeof *p);
}

#define vf_store_f16(p, v, n) store_f16(p, v, n)

#include "kernels_common.h"
#include "vec_impl.h"

DEFINE_F32_KERNELS(avx512);
DEFINE_VEC_KERNELS(avx512);
DEFINE_W16_KERNELS(avx512);

static inline void store_row(float *y, __m512 lo, __m512 hi, int32_t n_cols, kernel_mode mode)
{
    if (mode == KERNEL_ACCUMULATE) {
        lo = _mm512_add_ps(vf_load(y, n_cols), lo);
        hi = _mm512_add_ps(vf_load(y + 16, n_cols - 16), hi);
    }
    vf_store(y, lo, n_cols);
    vf_store(y + 16, hi, n_cols - 16);
}

enum { Q8_R = 4 };

/* 16 int8 as f32. */
INLINE __m512 widen_i8(const int8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* Per row, the exact sums of code_w · x_code over groups [g0, g1) of block
 * b (x_code = hi with one code, 128 · hi + lo with two). The int32 sums
 * start at -bias × comp[i], x's code sum over those groups, which cancels
 * the weights' bias: integer additions are exact in any order, and the
 * start costs nothing where an add at the end would cost 8 per block. */
INLINE void q8_sums(const q8_act_row *x, const uint8_t *wb, int32_t b, int g0, int g1, int codes,
                    int32_t bias, const int32_t *comp, __m512i sums[Q8_R][2])
{
    __m512i hi[Q8_R][2], lo[Q8_R][2];
    UNROLL for (int i = 0; i < Q8_R; i++)
    {
        const __m512i c = _mm512_set1_epi32(-bias * comp[i]);
        hi[i][0] = hi[i][1] = codes == 1 ? c : _mm512_setzero_si512();
        lo[i][0] = lo[i][1] = codes == 1 ? _mm512_setzero_si512() : c;
    }
    UNROLL for (int g = g0; g < g1; g++)
    {
        const __m512i w0 = _mm512_loadu_si512(wb + g * 4 * LMS_PANEL);
        const __m512i w1 = _mm512_loadu_si512(wb + g * 4 * LMS_PANEL + 64);
        UNROLL for (int i = 0; i < Q8_R; i++)
        {
            const int8_t *xc = x[i].codes + (size_t)b * codes * LMS_Q8_BLOCK + 4 * g;
            int32_t quad_hi;
            memcpy(&quad_hi, xc, sizeof quad_hi);
            const __m512i xh = _mm512_set1_epi32(quad_hi);
            hi[i][0] = _mm512_dpbusd_epi32(hi[i][0], w0, xh);
            hi[i][1] = _mm512_dpbusd_epi32(hi[i][1], w1, xh);
            if (codes == 1) continue;
            int32_t quad_lo;
            memcpy(&quad_lo, xc + LMS_Q8_BLOCK, sizeof quad_lo);
            const __m512i xl = _mm512_set1_epi32(quad_lo);
            lo[i][0] = _mm512_dpbusd_epi32(lo[i][0], w0, xl);
            lo[i][1] = _mm512_dpbusd_epi32(lo[i][1], w1, xl);
        }
    }
    UNROLL for (int i = 0; i < Q8_R; i++)
    {
        if (codes == 1) {
            sums[i][0] = hi[i][0];
            sums[i][1] = hi[i][1];
            continue;
        }
        sums[i][0] = _mm512_add_epi32(_mm512_slli_epi32(hi[i][0], 7), lo[i][0]);
        sums[i][1] = _mm512_add_epi32(_mm512_slli_epi32(hi[i][1], 7), lo[i][1]);
    }
}

/* The sums over groups [g0, g1) of block b, scaled by D · sc (sc: the
 * panel's sub-scales for them, or NULL for 1): acc = fma(sum, s ·
 * scale_x[b], acc) per row. */
INLINE void q8_part(__m512 acc[Q8_R][2], const q8_act_row *x, int32_t b, const uint8_t *wb, int g0,
                    int g1, int codes, int32_t bias, const int32_t *comp, __m512 d0, __m512 d1,
                    const int8_t *sc)
{
    __m512i sums[Q8_R][2];
    q8_sums(x, wb, b, g0, g1, codes, bias, comp, sums);
    if (sc) {
        d0 = _mm512_mul_ps(d0, widen_i8(sc));
        d1 = _mm512_mul_ps(d1, widen_i8(sc + 16));
    }
    UNROLL for (int i = 0; i < Q8_R; i++)
    {
        const __m512 sx = _mm512_set1_ps(x[i].scale[b]);
        acc[i][0] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[i][0]), _mm512_mul_ps(d0, sx), acc[i][0]);
        acc[i][1] =
            _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[i][1]), _mm512_mul_ps(d1, sx), acc[i][1]);
    }
}

/* kernels.h's Q8 sequence with codes (1 or 2) codes per activation value.
 * q8_0: the matrix has D per block and nothing else (Q8_0 and float
 * weights), so that the loop is compiled without the other layouts'
 * steps and tests. */
INLINE void q8_loop(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y, size_t ldy,
                    int32_t n_rows, int32_t n_cols, kernel_mode mode, int codes, bool q8_0)
{
    __m512 acc[Q8_R][2];
    UNROLL for (int i = 0; i < Q8_R; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int32_t b = 0; b < blocks; b++) {
        const uint8_t *wb = w->codes + (size_t)b * LMS_Q8_BLOCK * LMS_PANEL;
        const size_t group = (size_t)(q8_0 ? b : b / w->group_blocks) * LMS_PANEL;
        const __m512 d0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->scale + group)));
        const __m512 d1 =
            _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->scale + group + 16)));
        int32_t comp[2][Q8_R], whole[Q8_R];
        UNROLL for (int i = 0; i < Q8_R; i++)
        {
            comp[0][i] = x[i].comp[2 * b];
            comp[1][i] = x[i].comp[2 * b + 1];
            whole[i] = comp[0][i] + comp[1][i];
        }
        if (!q8_0 && w->halves == 2) {
            const int8_t *sc = w->sub_scale + (size_t)b * 2 * LMS_PANEL;
            q8_part(acc, x, b, wb, 0, 4, codes, w->bias, comp[0], d0, d1, sc);
            q8_part(acc, x, b, wb, 4, 8, codes, w->bias, comp[1], d0, d1, sc + LMS_PANEL);
        } else {
            q8_part(acc, x, b, wb, 0, 8, codes, w->bias, whole, d0, d1,
                    !q8_0 && w->sub_scale ? w->sub_scale + (size_t)b * LMS_PANEL : NULL);
        }
        if (q8_0 || !w->offset) continue;
        __m512 o0 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->offset + group)));
        __m512 o1 = _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)(w->offset + group + 16)));
        if (w->sub_offset) {
            o0 = _mm512_mul_ps(o0, widen_i8(w->sub_offset + (size_t)b * LMS_PANEL));
            o1 = _mm512_mul_ps(o1, widen_i8(w->sub_offset + (size_t)b * LMS_PANEL + 16));
        }
        UNROLL for (int i = 0; i < Q8_R; i++)
        {
            const __m512 sum_x = _mm512_set1_ps(x[i].sum[b]);
            acc[i][0] = _mm512_fmadd_ps(o0, sum_x, acc[i][0]);
            acc[i][1] = _mm512_fmadd_ps(o1, sum_x, acc[i][1]);
        }
    }
    UNROLL for (int i = 0; i < Q8_R; i++) if (i < n_rows)
        store_row(y + (size_t)i * ldy, acc[i][0], acc[i][1], n_cols, mode);
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

/* Lane j: the largest lane of m[j]. The values are >= 0 and not NaN, so
 * that max gives the same in any order: a tree of 45 shuffles and maxima
 * for 16 blocks, where a horizontal reduction per block would take 8
 * dependent steps each. */
INLINE __m512 max_lanes16(const __m512 m[16])
{
    __m512 t[8], u[4], v[2];
    /* 256-bit halves of blocks 2i, 2i + 1 */
    for (int i = 0; i < 8; i++)
        t[i] = _mm512_max_ps(_mm512_shuffle_f32x4(m[2 * i], m[2 * i + 1], 0x44),
                             _mm512_shuffle_f32x4(m[2 * i], m[2 * i + 1], 0xEE));
    /* 128-bit lane q: block 4i + q */
    for (int i = 0; i < 4; i++)
        u[i] = _mm512_max_ps(_mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0x88),
                             _mm512_shuffle_f32x4(t[2 * i], t[2 * i + 1], 0xDD));
    /* lane q: blocks 8i + q (two values), 8i + 4 + q (two) */
    for (int i = 0; i < 2; i++)
        v[i] = _mm512_max_ps(_mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0x44),
                             _mm512_shuffle_ps(u[2 * i], u[2 * i + 1], 0xEE));
    /* element 4q + s: block 4s + q */
    const __m512 r =
        _mm512_max_ps(_mm512_shuffle_ps(v[0], v[1], 0x88), _mm512_shuffle_ps(v[0], v[1], 0xDD));
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
    return _mm512_permutexvar_ps(order, r);
}

/* x[first + 16h, ...): the half h of a block, zeros past k; full: the
 * block lies below k. */
INLINE __m512 load_half(const float *x, int32_t k, int32_t first, int h, bool full)
{
    if (full) return _mm512_loadu_ps(x + first + 16 * h);
    return _mm512_maskz_loadu_ps(lane_mask(k - first - 16 * h), x + first + 16 * h);
}

/* comp[2j + h] = the sum of the codes of half h of block j, j < n ≤ 16
 * (one code per value: a block's 32 codes in a row), 4 blocks at a time:
 * vpsadbw sums 8 bytes code + 128 into a 64-bit lane, two lanes make a
 * half block, less 16 · 128. */
INLINE void code_sums(const int8_t *codes, int32_t n, int32_t *comp)
{
    const __m512i flip = _mm512_set1_epi8((char)0x80), zero = _mm512_setzero_si512();
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14);
    const __m512i odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    for (int32_t j = 0; j < n; j += 4) {
        __m512i s[2];
        for (int p = 0; p < 2; p++) {
            /* blocks j + 2p, j + 2p + 1: bytes past block n are not read */
            const int32_t bytes = (n - j - 2 * p) * LMS_Q8_BLOCK;
            const __mmask64 m = bytes >= 64  ? ~(__mmask64)0
                                : bytes <= 0 ? 0
                                             : ((__mmask64)1 << bytes) - 1;
            const __m512i c = _mm512_maskz_loadu_epi8(m, codes + (size_t)(j + 2 * p) * 32);
            s[p] = _mm512_sad_epu8(_mm512_xor_si512(c, flip), zero);
        }
        const __m512i halves =
            _mm512_sub_epi64(_mm512_add_epi64(_mm512_permutex2var_epi64(s[0], even, s[1]),
                                              _mm512_permutex2var_epi64(s[0], odd, s[1])),
                             _mm512_set1_epi64(16 * 128));
        const int32_t left = 2 * (n - j);
        _mm512_mask_cvtepi64_storeu_epi32(comp + 2 * j,
                                          left >= 8 ? 0xFF : (__mmask8)((1u << left) - 1), halves);
    }
}

/* kernels.h's quantiser with codes_per_value (1 or 2) codes per value for
 * blocks [b0, b0 + n), n ≤ 16 (full: all below k, so that the loads need
 * no masks): their amax, d and id as vectors (IEEE division gives the
 * same bits in a vector as in a scalar), then each block's codes. */
INLINE void q8_quantize16(const float *x, int32_t k, int32_t b0, int32_t n, int8_t *codes,
                          float *scales, int32_t *comp, int codes_per_value, bool full)
{
    const __m512 lo = _mm512_set1_ps(-127.0f), hi = _mm512_set1_ps(127.0f);
    {
        __m512 m[16];
        _Pragma("GCC unroll 16") for (int j = 0; j < 16; j++)
        {
            /* max(|v|, m) keeps m where v is NaN */
            m[j] = _mm512_setzero_ps();
            for (int h = 0; j < n && h < 2; h++)
                m[j] = _mm512_max_ps(
                    _mm512_abs_ps(load_half(x, k, (b0 + j) * LMS_Q8_BLOCK, h, full)), m[j]);
        }
        const __m512 d16 = _mm512_div_ps(max_lanes16(m), _mm512_set1_ps(127.0f));
        const __mmask16 nonzero = _mm512_cmp_ps_mask(d16, _mm512_setzero_ps(), _CMP_NEQ_UQ);
        float ds[16], ids[16];
        _mm512_storeu_ps(ds, d16);
        _mm512_storeu_ps(ids, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(1.0f), d16));
        for (int32_t j = 0; j < n; j++) {
            const int32_t b = b0 + j, first = b * LMS_Q8_BLOCK;
            const float d = ds[j], id = ids[j];
            __m512 v[2];
            for (int h = 0; h < 2; h++)
                v[h] = load_half(x, k, first, h, full);
            const __m512 vd = _mm512_set1_ps(d), vid = _mm512_set1_ps(id);
            const __m512 vid128 = _mm512_set1_ps(id * 128.0f);
            int8_t *out = codes + (size_t)b * codes_per_value * LMS_Q8_BLOCK;
            for (int h = 0; h < 2; h++) {
                /* max(t, -127) is -127 where t is NaN */
                const __m512 t = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(v[h], vid), lo), hi);
                if (codes_per_value == 1) {
                    /* rne by the instruction's rounding, not MXCSR's */
                    const __m512i q =
                        _mm512_cvt_roundps_epi32(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                    _mm_storeu_si128((__m128i *)(out + 16 * h), _mm512_cvtepi32_epi8(q));
                    continue;
                }
                const __m512 qh =
                    _mm512_roundscale_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                const __m512 r = _mm512_sub_ps(v[h], _mm512_mul_ps(qh, vd));
                const __m512 u = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(r, vid128), lo), hi);
                const __m512i qhi = _mm512_cvtps_epi32(qh);
                const __m512i qlo = _mm512_cvtps_epi32(
                    _mm512_roundscale_ps(u, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
                _mm_storeu_si128((__m128i *)(out + 16 * h), _mm512_cvtepi32_epi8(qhi));
                _mm_storeu_si128((__m128i *)(out + LMS_Q8_BLOCK + 16 * h),
                                 _mm512_cvtepi32_epi8(qlo));
                comp[2 * b + h] =
                    _mm512_reduce_add_epi32(_mm512_add_epi32(_mm512_slli_epi32(qhi, 7), qlo));
            }
            scales[b] = codes_per_value == 1 ? d : d * 0x1p-7f;
        }
        if (codes_per_value == 1) code_sums(codes + (size_t)b0 * LMS_Q8_BLOCK, n, comp + 2 * b0);
    }
}

INLINE void q8_quantize(const float *x, int32_t k, int32_t blocks, int8_t *codes, float *scales,
                        int32_t *comp, int codes_per_value)
{
    for (int32_t b0 = 0; b0 < blocks; b0 += 16) {
        const int32_t n = blocks - b0 < 16 ? blocks - b0 : 16;
        if ((b0 + n) * LMS_Q8_BLOCK <= k)
            q8_quantize16(x, k, b0, n, codes, scales, comp, codes_per_value, true);
        else
            q8_quantize16(x, k, b0, n, codes, scales, comp, codes_per_value, false);
    }
}

static void q8_kernel_avx512_vnni(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                                  size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode)
{
    q8_kernel(x, blocks, w, y, ldy, n_rows, n_cols, mode, 1);
}

static void q8x2_kernel_avx512_vnni(const q8_act_row *x, int32_t blocks, const q8_panel *w,
                                    float *y, size_t ldy, int32_t n_rows, int32_t n_cols,
                                    kernel_mode mode)
{
    q8_kernel(x, blocks, w, y, ldy, n_rows, n_cols, mode, 2);
}

static void q8_quantize_avx512(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                               float *scales, int32_t *comp)
{
    q8_quantize(x, k, blocks, codes, scales, comp, 1);
}

static void q8x2_quantize_avx512(const float *x, int32_t k, int32_t blocks, int8_t *codes,
                                 float *scales, int32_t *comp)
{
    q8_quantize(x, k, blocks, codes, scales, comp, 2);
}

const q8_kernels q8_kernels_avx512_vnni = {q8_kernel_avx512_vnni, Q8_R, "avx512-vnni",
                                           q8_quantize_avx512, false};
const q8_kernels q8x2_kernels_avx512_vnni = {q8x2_kernel_avx512_vnni, Q8_R, "avx512-vnni",
                                             q8x2_quantize_avx512, false};
