/*
 * quant.c — ggml's reference quantisers, reimplemented (see mm_quant.h).
 *
 * Bit-identical output needs ggml's arithmetic exactly: every float
 * expression is written in ggml's operand order and types (an int operand
 * converts to float before the operation, left to right), nothing is fused
 * (-ffp-contract=off), and ggml's own rounding helpers are reproduced:
 * nearest_int (add 1.5 * 2^23 and read the mantissa, ties to even),
 * truncation to an integer as x86 does it (x86_truncate), roundf. The
 * searches for the best scale (rmse_search_symmetric, fit_scale_min) are
 * ggml's make_qx_quants with x² weights and make_qkx2_quants.
 */
#include "mm_quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "mm_weights.h"

/* ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is all
 * zero. */
#define GROUP_MAX_EPS 1e-15f

static int imin(int a, int b)
{
    return a < b ? a : b;
}

static int imax(int a, int b)
{
    return a > b ? a : b;
}

static int nearest_int(float x)
{
    const float shifted = x + 12582912.f;
    int32_t bits;
    memcpy(&bits, &shifted, sizeof bits);
    return (bits & 0x007fffff) - 0x00400000;
}

/* ggml converts floats to int8_t/uint8_t with C casts, which x86 compiles
 * to a truncation to int32 that gives 0x80000000 for NaN and out-of-range
 * values; the narrowing keeps the low byte, 0. Blocks whose scale is
 * subnormal reach that case (1 / d overflows to inf); the same bytes come
 * out here without the cast's undefined behaviour. */
static int32_t x86_truncate(float x)
{
    return x > -2147483648.0f && x < 2147483648.0f ? (int32_t)x : INT32_MIN;
}

static void put_f16(uint8_t *out, float x)
{
    const uint16_t h = mm_f32_to_f16(x);
    out[0] = (uint8_t)(h & 0xff);
    out[1] = (uint8_t)(h >> 8);
}

static float get_f16(const uint8_t *in)
{
    return mm_f16_to_f32((uint16_t)(in[0] | in[1] << 8));
}

/* The element of largest magnitude (the first of equals), as ggml picks
 * it for the symmetric types. */
static float signed_absmax(const float *x, int n)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static void min_max(const float *x, int n, float *min, float *max)
{
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < *min) *min = x[j];
        if (x[j] > *max) *max = x[j];
    }
}

/* ---- 32-element blocks ---- */

/* The header of Q4_0 and Q5_0: f16 d = max / -half (max: the element of
 * largest magnitude), so that max maps to level 0; returns 1 / d (0 for an
 * all-zero block). */
static float put_symmetric_scale(const float *x, int half, uint8_t *out)
{
    const float d = signed_absmax(x, 32) / -half;
    put_f16(out, d);
    return d != 0.0f ? 1.0f / d : 0.0f;
}

/* The header of Q4_1 and Q5_1: f16 d = (max - min) / steps, f16 m = min;
 * returns 1 / d (0 for a constant block). */
static float put_affine_scale(const float *x, int steps, uint8_t *out, float *min)
{
    float max;
    min_max(x, 32, min, &max);
    const float d = (max - *min) / steps;
    put_f16(out, d);
    put_f16(out + 2, *min);
    return d != 0.0f ? 1.0f / d : 0.0f;
}

/* Q4_0: 18 bytes, q = min(15, trunc(x / d + 8.5)). */
static void q4_0_block(const float *x, uint8_t *out)
{
    const float id = put_symmetric_scale(x, 8, out);
    for (int j = 0; j < 16; j++) {
        const int lo = imin(15, (int8_t)x86_truncate(x[j] * id + 8.5f));
        const int hi = imin(15, (int8_t)x86_truncate(x[j + 16] * id + 8.5f));
        out[2 + j] = (uint8_t)(lo | hi << 4);
    }
}

/* Q4_1: 20 bytes, q = min(15, trunc((x - m) / d + 0.5)). */
static void q4_1_block(const float *x, uint8_t *out)
{
    float min;
    const float id = put_affine_scale(x, 15, out, &min);
    for (int j = 0; j < 16; j++) {
        const int lo = imin(15, (int8_t)x86_truncate((x[j] - min) * id + 0.5f));
        const int hi = imin(15, (int8_t)x86_truncate((x[j + 16] - min) * id + 0.5f));
        out[4 + j] = (uint8_t)(lo | hi << 4);
    }
}

/* The low nibbles of 32 five-bit values, and their fifth bits as a
 * little-endian u32 (element j at bit j). */
static void put_five_bits(const int *v, uint8_t *high, uint8_t *nibbles)
{
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        nibbles[j] = (uint8_t)((v[j] & 0x0F) | (v[j + 16] & 0x0F) << 4);
        qh |= (uint32_t)((v[j] & 0x10) >> 4) << j;
        qh |= (uint32_t)((v[j + 16] & 0x10) >> 4) << (j + 16);
    }
    for (int k = 0; k < 4; k++)
        high[k] = (uint8_t)(qh >> (8 * k));
}

/* Q5_0: 22 bytes, q = min(31, trunc(x / d + 16.5)). */
static void q5_0_block(const float *x, uint8_t *out)
{
    const float id = put_symmetric_scale(x, 16, out);
    int v[32];
    for (int j = 0; j < 32; j++)
        v[j] = imin(31, (int8_t)x86_truncate(x[j] * id + 16.5f));
    put_five_bits(v, out + 2, out + 6);
}

/* Q5_1: 24 bytes, q = trunc((x - m) / d + 0.5). */
static void q5_1_block(const float *x, uint8_t *out)
{
    float min;
    const float id = put_affine_scale(x, 31, out, &min);
    int v[32];
    for (int j = 0; j < 32; j++)
        v[j] = (uint8_t)x86_truncate((x[j] - min) * id + 0.5f);
    put_five_bits(v, out + 4, out + 8);
}

/* Q8_0: 34 bytes, f16 d = max|x| / 127, q = round(x / d). */
static void q8_0_block(const float *x, uint8_t *out)
{
    float amax = 0.0f;
    for (int j = 0; j < 32; j++)
        amax = amax > fabsf(x[j]) ? amax : fabsf(x[j]);
    const float d = amax / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    put_f16(out, d);
    for (int j = 0; j < 32; j++)
        out[2 + j] = (uint8_t)x86_truncate(roundf(x[j] * id));
}

/* ---- 256-element super-blocks ---- */

/* ggml's make_qx_quants with x² weights: values l in [-nmax, nmax - 1]
 * (stored l + nmax) and the scale minimising the weighted squared error,
 * searching 19 candidate scales around nmax / max. */
static float rmse_search_symmetric(int n, int nmax, const float *x, int8_t *levels)
{
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < n; i++) {
        const float ax = fabsf(x[i]);
        if (ax > amax) {
            amax = ax;
            max = x[i];
        }
    }
    if (amax < GROUP_MAX_EPS) {
        memset(levels, 0, (size_t)n);
        return 0.0f;
    }
    float iscale = -nmax / max;
    float sumlx = 0.0f, suml2 = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
        levels[i] = (int8_t)(l + nmax);
        const float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 != 0.0f ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0) continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i])));
            const float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++)
                levels[i] =
                    (int8_t)(nmax + imax(-nmax, imin(nmax - 1, nearest_int(iscale * x[i]))));
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* ggml's make_qkx2_quants: x ≈ scale · l - min_out with l in [0, nmax]
 * and min_out ≥ 0, fitted by weighted least squares over nstep + 1
 * candidate scales; returns the scale (0 for a constant group). */
static float fit_scale_min(int n, int nmax, const float *x, const float *weights, uint8_t *levels,
                           float *min_out, float rmin, float rdelta, int nstep)
{
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min) min = x[i];
        if (x[i] > max) max = x[i];
        const float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0) min = 0;
    if (max == min) {
        memset(levels, 0, (size_t)n);
        *min_out = -min;
        return 0.0f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0.0f;
    for (int i = 0; i < n; i++) {
        const int l = nearest_int(iscale * (x[i] - min));
        levels[i] = (uint8_t)imax(0, imin(nmax, l));
        const float diff = scale * levels[i] + min - x[i];
        best_error += weights[i] * (diff * diff);
    }
    uint8_t trial[32];
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0.0f, sum_l2 = 0.0f, sum_xl = 0.0f;
        for (int i = 0; i < n; i++) {
            const int l = imax(0, imin(nmax, nearest_int(iscale * (x[i] - min))));
            trial[i] = (uint8_t)l;
            const float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        const float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float error = 0.0f;
            for (int i = 0; i < n; i++) {
                const float diff = this_scale * trial[i] + this_min - x[i];
                error += weights[i] * (diff * diff);
            }
            if (error < best_error) {
                memcpy(levels, trial, (size_t)n);
                best_error = error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *min_out = -min;
    return scale;
}

/* The 12 bytes of Q4_K/Q5_K's eight 6-bit (scale, min) pairs: pairs 0-3
 * in the low six bits of bytes 0-3 and 4-7, pairs 4-7 as nibbles of bytes
 * 8-11 with their top two bits in the high bits of bytes 0-7. */
static void put_k_scales(const uint8_t *ls, const uint8_t *lm, uint8_t *scales)
{
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            scales[j] = ls[j];
            scales[j + 4] = lm[j];
        } else {
            scales[j + 4] = (uint8_t)((ls[j] & 0x0F) | (lm[j] & 0x0F) << 4);
            scales[j - 4] |= (uint8_t)((ls[j] >> 4) << 6);
            scales[j] |= (uint8_t)((lm[j] >> 4) << 6);
        }
    }
}

static void get_k_scale(const uint8_t *scales, int j, uint8_t *sc, uint8_t *m)
{
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 0x0F) | (scales[j - 4] >> 6) << 4);
        *m = (uint8_t)((scales[j + 4] >> 4) | (scales[j] >> 6) << 4);
    }
}

/* Q4_K and Q5_K (nmax 15 or 31): eight sub-blocks of 32 fitted with
 * (scale, min), both quantised to 6 bits against the super-block's f16 d
 * and dmin, then every value requantised against the stored scales.
 * Writes d, dmin and the 12 scale bytes at out; levels receives the 256
 * values. */
static void k_quant_scales(const float *x, int nmax, float rmin, float rdelta, int nstep,
                           uint8_t *out, uint8_t *levels)
{
    float scales[8], mins[8], weights[32];
    float max_scale = 0.0f, max_min = 0.0f;
    for (int j = 0; j < 8; j++) {
        const float *xs = x + 32 * j;
        float sum_x2 = 0.0f;
        for (int l = 0; l < 32; l++)
            sum_x2 += xs[l] * xs[l];
        const float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            weights[l] = av_x + fabsf(xs[l]);
        scales[j] =
            fit_scale_min(32, nmax, xs, weights, levels + 32 * j, &mins[j], rmin, rdelta, nstep);
        if (scales[j] > max_scale) max_scale = scales[j];
        if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t ls[8], lm[8];
    for (int j = 0; j < 8; j++) {
        /* ggml stores nearest_int into a uint8_t before clamping. */
        ls[j] = (uint8_t)imin(63, (uint8_t)nearest_int(inv_scale * scales[j]));
        lm[j] = (uint8_t)imin(63, (uint8_t)nearest_int(inv_min * mins[j]));
    }
    put_f16(out, max_scale / 63.f);
    put_f16(out + 2, max_min / 63.f);
    put_k_scales(ls, lm, out + 4);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        get_k_scale(out + 4, j, &sc, &m);
        const float d = get_f16(out) * sc;
        if (d == 0.0f) continue;
        const float dm = get_f16(out + 2) * m;
        for (int i = 0; i < 32; i++)
            levels[32 * j + i] =
                (uint8_t)imax(0, imin(nmax, nearest_int((x[32 * j + i] + dm) / d)));
    }
}

/* Q4_K: 144 bytes: d, dmin, 12 scale bytes, 128 bytes of nibbles (each
 * 64 values: the low nibbles hold the first 32, the high ones the next). */
static void q4_k_block(const float *x, uint8_t *out)
{
    uint8_t levels[256];
    k_quant_scales(x, 15, -1.f, 0.1f, 20, out, levels);
    uint8_t *q = out + 16;
    for (int g = 0; g < 256; g += 64, q += 32)
        for (int l = 0; l < 32; l++)
            q[l] = (uint8_t)(levels[g + l] | levels[g + l + 32] << 4);
}

/* Q5_K: 176 bytes: d, dmin, 12 scale bytes, 32 bytes of fifth bits (two
 * bits per 64 values), 128 bytes of nibbles laid out as Q4_K's. */
static void q5_k_block(const float *x, uint8_t *out)
{
    uint8_t levels[256];
    k_quant_scales(x, 31, -0.5f, 0.1f, 15, out, levels);
    uint8_t *qh = out + 16, *ql = out + 48;
    memset(qh, 0, 32);
    uint8_t bit1 = 1, bit2 = 2;
    for (int g = 0; g < 256; g += 64, ql += 32, bit1 <<= 2, bit2 <<= 2) {
        for (int j = 0; j < 32; j++) {
            int l1 = levels[g + j], l2 = levels[g + j + 32];
            if (l1 > 15) {
                l1 -= 16;
                qh[j] |= bit1;
            }
            if (l2 > 15) {
                l2 -= 16;
                qh[j] |= bit2;
            }
            ql[j] = (uint8_t)(l1 | l2 << 4);
        }
    }
}

/* Q6_K: 210 bytes: 128 bytes of low nibbles, 64 of high 2-bit pairs, 16
 * int8 sub-block scales (sub-blocks of 16) against the f16 d at the end. */
static void q6_k_block(const float *x, uint8_t *out)
{
    int8_t levels[256];
    float scales[16];
    float max_scale = 0.0f, max_abs_scale = 0.0f;
    for (int s = 0; s < 16; s++) {
        scales[s] = rmse_search_symmetric(16, 32, x + 16 * s, levels + 16 * s);
        if (fabsf(scales[s]) > max_abs_scale) {
            max_abs_scale = fabsf(scales[s]);
            max_scale = scales[s];
        }
    }
    if (max_abs_scale < GROUP_MAX_EPS) {
        memset(out, 0, 210);
        return;
    }
    const float iscale = -128.f / max_scale;
    put_f16(out + 208, 1 / iscale);
    int8_t *sc = (int8_t *)(out + 192);
    for (int s = 0; s < 16; s++)
        sc[s] = (int8_t)imin(127, nearest_int(iscale * scales[s]));
    for (int s = 0; s < 16; s++) {
        const float d = get_f16(out + 208) * sc[s];
        if (d == 0.0f) continue;
        for (int i = 0; i < 16; i++)
            levels[16 * s + i] = (int8_t)(imax(-32, imin(31, nearest_int(x[16 * s + i] / d))) + 32);
    }
    uint8_t *ql = out, *qh = out + 128;
    for (int h = 0; h < 256; h += 128, ql += 64, qh += 32) {
        const int8_t *L = levels + h;
        for (int l = 0; l < 32; l++) {
            ql[l] = (uint8_t)((L[l] & 0x0F) | (L[l + 64] & 0x0F) << 4);
            ql[l + 32] = (uint8_t)((L[l + 32] & 0x0F) | (L[l + 96] & 0x0F) << 4);
            qh[l] = (uint8_t)((L[l] >> 4) | (L[l + 32] >> 4) << 2 | (L[l + 64] >> 4) << 4 |
                              (L[l + 96] >> 4) << 6);
        }
    }
}

void mm_quantize_row(mm_dtype type, const float *x, int64_t n, uint8_t *out)
{
    void (*block)(const float *, uint8_t *) = NULL;
    switch (type) {
    case MM_DTYPE_Q4_0:
        block = q4_0_block;
        break;
    case MM_DTYPE_Q4_1:
        block = q4_1_block;
        break;
    case MM_DTYPE_Q5_0:
        block = q5_0_block;
        break;
    case MM_DTYPE_Q5_1:
        block = q5_1_block;
        break;
    case MM_DTYPE_Q8_0:
        block = q8_0_block;
        break;
    case MM_DTYPE_Q4_K:
        block = q4_k_block;
        break;
    case MM_DTYPE_Q5_K:
        block = q5_k_block;
        break;
    case MM_DTYPE_Q6_K:
        block = q6_k_block;
        break;
    case MM_DTYPE_F32:
    case MM_DTYPE_F16:
    case MM_DTYPE_BF16:
        return;
    }
    const mm_dtype_info *t = mm_dtype_about(type);
    for (int64_t b = 0; b < n / t->block; b++)
        block(x + b * t->block, out + (uint64_t)b * t->block_bytes);
}
