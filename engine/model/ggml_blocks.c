/*
 * ggml_blocks.c — ggml's block formats unpacked and decoded to f32 (see
 * ggml_blocks.h).
 *
 * Decoding mirrors the arithmetic of ggml's dequantize_row_* for each type:
 * integers convert to float exactly, then the products and the sum come in
 * ggml's order ((d · sc) · q − dmin · m), each rounded on its own (the
 * build passes -ffp-contract=off), which is what makes the values identical
 * to ggml's rather than merely close.
 */
#include "ggml_blocks.h"

#include <string.h>

#include "half.h"

static uint32_t load_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Q4_0, Q4_1: element j is the low nibble of q[j], element j + 16 its high
 * nibble; minus bias. */
static void four_bit_values(const unsigned char *q, int bias, int8_t *out)
{
    for (int j = 0; j < 16; j++) {
        out[j] = (int8_t)((q[j] & 0x0F) - bias);
        out[j + 16] = (int8_t)((q[j] >> 4) - bias);
    }
}

/* Q5_0, Q5_1: as four_bit_values, with element j's fifth bit from bit j of
 * the 32 high bits. */
static void five_bit_values(const unsigned char *high, const unsigned char *q, int bias,
                            int8_t *out)
{
    const uint32_t qh = load_u32(high);
    for (int j = 0; j < 16; j++) {
        out[j] = (int8_t)(((q[j] & 0x0F) | (int)(((qh >> j) << 4) & 0x10)) - bias);
        out[j + 16] = (int8_t)(((q[j] >> 4) | (int)((qh >> (j + 12)) & 0x10)) - bias);
    }
}

/* Sub-block j's 6-bit scale and min of a Q4_K/Q5_K block: for j < 4 the
 * low six bits of bytes j and j + 4; for j ≥ 4 a nibble of byte j + 4 with
 * the top two bits of bytes j - 4 (scale) and j (min) above it. */
static void k_scales_mins(const unsigned char *scales, uint8_t *sc, uint8_t *m)
{
    for (int j = 0; j < 8; j++) {
        if (j < 4) {
            sc[j] = scales[j] & 63u;
            m[j] = scales[j + 4] & 63u;
        } else {
            sc[j] = (uint8_t)((scales[j + 4] & 0x0Fu) | ((scales[j - 4] >> 6) << 4));
            m[j] = (uint8_t)((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4));
        }
    }
}

/* Q4_K and Q5_K: 4 groups of 64 elements, each the low then the high
 * nibbles of 32 bytes; Q5_K's fifth bits sit in 32 bytes, two bits per
 * group (high == NULL for Q4_K). */
static void k_quant_4_5(const unsigned char *b, const unsigned char *high, const unsigned char *q,
                        lms_ggml_block *out)
{
    out->d = lms_load_u16(b);
    out->dmin = lms_load_u16(b + 2);
    k_scales_mins(b + 4, out->sc, out->m);
    int8_t *v = out->q;
    for (int g = 0; g < 4; g++, q += 32, v += 64) {
        const unsigned bit1 = 1u << (2 * g), bit2 = 2u << (2 * g);
        for (int l = 0; l < 32; l++) {
            v[l] = (int8_t)((q[l] & 0x0F) + (high && (high[l] & bit1) ? 16 : 0));
            v[l + 32] = (int8_t)((q[l] >> 4) + (high && (high[l] & bit2) ? 16 : 0));
        }
    }
}

/* Q6_K: 2 halves of 128 elements; in each, element l + 32k takes a nibble
 * of ql (low of ql[l], low of ql[l + 32], high of ql[l], high of
 * ql[l + 32] for k = 0..3) and bits 2k..2k+1 of qh[l]. */
static void q6_k(const unsigned char *b, lms_ggml_block *out)
{
    const unsigned char *ql = b, *qh = b + 128;
    memcpy(out->sc, b + 192, 16);
    out->d = lms_load_u16(b + 208);
    int8_t *v = out->q;
    for (int half = 0; half < 2; half++, ql += 64, qh += 32, v += 128) {
        for (int l = 0; l < 32; l++) {
            v[l] = (int8_t)(((ql[l] & 0x0F) | (((qh[l] >> 0) & 3) << 4)) - 32);
            v[l + 32] = (int8_t)(((ql[l + 32] & 0x0F) | (((qh[l] >> 2) & 3) << 4)) - 32);
            v[l + 64] = (int8_t)(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
            v[l + 96] = (int8_t)(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
        }
    }
}

void lms_ggml_block_unpack(lms_dtype type, const unsigned char *b, lms_ggml_block *out)
{
    memset(out, 0, sizeof *out);
    switch (type) {
    case LMS_DTYPE_Q4_0:
        out->d = lms_load_u16(b);
        four_bit_values(b + 2, 8, out->q);
        return;
    case LMS_DTYPE_Q4_1:
        out->d = lms_load_u16(b);
        out->dmin = lms_load_u16(b + 2);
        four_bit_values(b + 4, 0, out->q);
        return;
    case LMS_DTYPE_Q5_0:
        out->d = lms_load_u16(b);
        five_bit_values(b + 2, b + 6, 16, out->q);
        return;
    case LMS_DTYPE_Q5_1:
        out->d = lms_load_u16(b);
        out->dmin = lms_load_u16(b + 2);
        five_bit_values(b + 4, b + 8, 0, out->q);
        return;
    case LMS_DTYPE_Q8_0:
        out->d = lms_load_u16(b);
        memcpy(out->q, b + 2, 32);
        return;
    case LMS_DTYPE_Q4_K:
        k_quant_4_5(b, NULL, b + 16, out);
        return;
    case LMS_DTYPE_Q5_K:
        k_quant_4_5(b, b + 16, b + 48, out);
        return;
    case LMS_DTYPE_Q6_K:
        q6_k(b, out);
        return;
    case LMS_DTYPE_F32:
    case LMS_DTYPE_F16:
    case LMS_DTYPE_BF16:
        return;
    }
}

/* A block's values from its numbers, in ggml's arithmetic for type. */
static void decode(lms_dtype type, const lms_ggml_block *b, float *out)
{
    const float d = lms_f16_to_f32(b->d), dmin = lms_f16_to_f32(b->dmin);
    switch (type) {
    case LMS_DTYPE_Q4_0:
    case LMS_DTYPE_Q5_0:
    case LMS_DTYPE_Q8_0:
        for (int i = 0; i < 32; i++)
            out[i] = (float)b->q[i] * d;
        return;
    case LMS_DTYPE_Q4_1:
    case LMS_DTYPE_Q5_1:
        for (int i = 0; i < 32; i++)
            out[i] = (float)b->q[i] * d + dmin;
        return;
    case LMS_DTYPE_Q4_K:
    case LMS_DTYPE_Q5_K:
        for (int s = 0; s < 8; s++) {
            const float d1 = d * (float)b->sc[s], m1 = dmin * (float)b->m[s];
            for (int l = 0; l < 32; l++)
                out[32 * s + l] = d1 * (float)b->q[32 * s + l] - m1;
        }
        return;
    case LMS_DTYPE_Q6_K:
        for (int i = 0; i < 256; i++)
            out[i] = d * (float)(int8_t)b->sc[i / 16] * (float)b->q[i];
        return;
    case LMS_DTYPE_F32:
    case LMS_DTYPE_F16:
    case LMS_DTYPE_BF16:
        return;
    }
}

void lms_ggml_blocks_to_f32(lms_dtype type, const unsigned char *src, size_t n_blocks, float *dst)
{
    const size_t bytes = lms_dtype_block_bytes(type), elements = lms_dtype_block_elements(type);
    if (elements == 1) return;
    lms_ggml_block b;
    for (size_t i = 0; i < n_blocks; i++) {
        lms_ggml_block_unpack(type, src + i * bytes, &b);
        decode(type, &b, dst + i * elements);
    }
}
