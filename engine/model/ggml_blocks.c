/*
 * ggml_blocks.c — ggml's block formats to f32 (see ggml_blocks.h).
 *
 * Each decoder mirrors the arithmetic of ggml's dequantize_row_* for its
 * type: integers convert to float exactly, then the products and the sum
 * come in ggml's order ((d · sc) · q − dmin · m), each rounded on its own
 * (the build passes -ffp-contract=off), which is what makes the values
 * identical to ggml's rather than merely close.
 */
#include "ggml_blocks.h"

#include <stdint.h>

#include "half.h"

static void q4_0_block(const unsigned char *b, float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    const unsigned char *q = b + 2;
    for (int j = 0; j < 16; j++) {
        out[j] = (float)((q[j] & 0x0F) - 8) * d;
        out[j + 16] = (float)((q[j] >> 4) - 8) * d;
    }
}

static void q4_1_block(const unsigned char *b, float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    const float m = lms_f16_to_f32(lms_load_u16(b + 2));
    const unsigned char *q = b + 4;
    for (int j = 0; j < 16; j++) {
        out[j] = (float)(q[j] & 0x0F) * d + m;
        out[j + 16] = (float)(q[j] >> 4) * d + m;
    }
}

static uint32_t load_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* The 5-bit values of a Q5_0/Q5_1 block: element j's low nibble from q,
 * its fifth bit from bit j of the 32 high bits. */
static void five_bit_values(const unsigned char *high, const unsigned char *q, int *values)
{
    const uint32_t qh = load_u32(high);
    for (int j = 0; j < 16; j++) {
        values[j] = (q[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10);
        values[j + 16] = (q[j] >> 4) | (int)((qh >> (j + 12)) & 0x10);
    }
}

static void q5_0_block(const unsigned char *b, float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    int values[32];
    five_bit_values(b + 2, b + 6, values);
    for (int j = 0; j < 32; j++)
        out[j] = (float)(values[j] - 16) * d;
}

static void q5_1_block(const unsigned char *b, float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    const float m = lms_f16_to_f32(lms_load_u16(b + 2));
    int values[32];
    five_bit_values(b + 4, b + 8, values);
    for (int j = 0; j < 32; j++)
        out[j] = (float)values[j] * d + m;
}

static void q8_0_block(const unsigned char *b, float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    const int8_t *q = (const int8_t *)(b + 2);
    for (int j = 0; j < 32; j++)
        out[j] = (float)q[j] * d;
}

/* Sub-block j's 6-bit scale and min of a Q4_K/Q5_K block: for j < 4 the
 * low six bits of bytes j and j + 4; for j ≥ 4 a nibble of byte j + 4 with
 * the top two bits of bytes j - 4 (scale) and j (min) above it. */
static void k_scale_min(const unsigned char *scales, int j, float d, float dmin, float *scale,
                        float *min)
{
    unsigned sc, m;
    if (j < 4) {
        sc = scales[j] & 63u;
        m = scales[j + 4] & 63u;
    } else {
        sc = (scales[j + 4] & 0x0Fu) | ((scales[j - 4] >> 6) << 4);
        m = (scales[j + 4] >> 4) | ((scales[j] >> 6) << 4);
    }
    *scale = d * (float)sc;
    *min = dmin * (float)m;
}

/* Q4_K and Q5_K: 4 groups of 64 elements, each the low then the high
 * nibbles of 32 bytes; Q5_K's fifth bits sit in 32 bytes, two bits per
 * group (high == NULL for Q4_K). */
static void k_quant_4_5(const unsigned char *b, const unsigned char *high, const unsigned char *q,
                        float *out)
{
    const float d = lms_f16_to_f32(lms_load_u16(b));
    const float dmin = lms_f16_to_f32(lms_load_u16(b + 2));
    const unsigned char *scales = b + 4;
    for (int g = 0; g < 4; g++, q += 32, out += 64) {
        float d1, m1, d2, m2;
        k_scale_min(scales, 2 * g, d, dmin, &d1, &m1);
        k_scale_min(scales, 2 * g + 1, d, dmin, &d2, &m2);
        const unsigned bit1 = 1u << (2 * g), bit2 = 2u << (2 * g);
        for (int l = 0; l < 32; l++) {
            const int lo = (q[l] & 0x0F) + (high && (high[l] & bit1) ? 16 : 0);
            const int hi = (q[l] >> 4) + (high && (high[l] & bit2) ? 16 : 0);
            out[l] = d1 * (float)lo - m1;
            out[l + 32] = d2 * (float)hi - m2;
        }
    }
}

static void q4_k_block(const unsigned char *b, float *out)
{
    k_quant_4_5(b, NULL, b + 16, out);
}

static void q5_k_block(const unsigned char *b, float *out)
{
    k_quant_4_5(b, b + 16, b + 48, out);
}

/* Q6_K: 2 halves of 128 elements; in each, element l + 32k takes a nibble
 * of ql (low of ql[l], low of ql[l + 32], high of ql[l], high of
 * ql[l + 32] for k = 0..3) and bits 2k..2k+1 of qh[l]; sub-block (16
 * elements) s has the int8 scale sc[s]. */
static void q6_k_block(const unsigned char *b, float *out)
{
    const unsigned char *ql = b, *qh = b + 128;
    const int8_t *sc = (const int8_t *)(b + 192);
    const float d = lms_f16_to_f32(lms_load_u16(b + 208));
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, sc += 8, out += 128) {
        for (int l = 0; l < 32; l++) {
            const int s = l / 16;
            const int q1 = ((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32;
            const int q2 = ((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32;
            const int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            const int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            out[l] = d * (float)sc[s] * (float)q1;
            out[l + 32] = d * (float)sc[s + 2] * (float)q2;
            out[l + 64] = d * (float)sc[s + 4] * (float)q3;
            out[l + 96] = d * (float)sc[s + 6] * (float)q4;
        }
    }
}

typedef void (*block_decoder)(const unsigned char *block, float *out);

static block_decoder decoder_of(lms_dtype type)
{
    switch (type) {
    case LMS_DTYPE_Q4_0:
        return q4_0_block;
    case LMS_DTYPE_Q4_1:
        return q4_1_block;
    case LMS_DTYPE_Q5_0:
        return q5_0_block;
    case LMS_DTYPE_Q5_1:
        return q5_1_block;
    case LMS_DTYPE_Q8_0:
        return q8_0_block;
    case LMS_DTYPE_Q4_K:
        return q4_k_block;
    case LMS_DTYPE_Q5_K:
        return q5_k_block;
    case LMS_DTYPE_Q6_K:
        return q6_k_block;
    case LMS_DTYPE_F32:
    case LMS_DTYPE_F16:
    case LMS_DTYPE_BF16:
        break;
    }
    return NULL;
}

void lms_ggml_blocks_to_f32(lms_dtype type, const unsigned char *src, size_t n_blocks, float *dst)
{
    const block_decoder decode = decoder_of(type);
    const size_t bytes = lms_dtype_block_bytes(type), elements = lms_dtype_block_elements(type);
    if (!decode) return;
    for (size_t i = 0; i < n_blocks; i++)
        decode(src + i * bytes, dst + i * elements);
}
