/*
 * weights.h — a projection matrix as the compute kernels read it.
 *
 * W is [n × k] (out_features × in_features: y = x·Wᵀ) in one of four
 * formats:
 *
 *   F32,  floats or 16-bit floats packed in panels of LMS_PANEL columns:
 *   F16,  panel p holds columns [32p, 32p+32), k-major — element (row
 *   BF16  32p+j, col kk) at [p][kk][j] — so a kernel reads one vector of 32
 *         columns per kk. The checkpoint's 16-bit type is kept (f16 stays
 *         f16: exact). A tier may order a BF16 panel's values its own way
 *         (bf16_at; the amx tiers pair k values for the tiles).
 *   Q8    signed 8-bit codes in blocks of LMS_Q8_BLOCK along k. Panel p,
 *         block b holds 8 groups of 4 k values × 32 columns,
 *         column-interleaved as VNNI's dot products read them — byte
 *         (g, j, i) is column 32p+j, k index 32b + 4g + i — and each byte
 *         is code + bias, an unsigned byte: bias 128 for codes of the full
 *         int8 range (Q8_0, float weights), else the smallest that makes
 *         the type's codes non-negative, so that they stay below 64 (0 for
 *         Q4_1, Q5_1, Q4_K, Q5_K; 8 for Q4_0, 16 for Q5_0, 32 for Q6_K).
 *         A tier may keep the full-range codes as signed bytes instead
 *         (layout.signed_codes, bias 0: the amx tiers' tdpbssd reads a
 *         block's 8 groups × 16 columns as a B tile in place, as their
 *         tdpbsud reads the small-bias bytes); only that tier's own
 *         kernels read such a matrix.
 *         Element value = code · s, or code · s + o rounded
 *         once to f32 when the matrix has offsets (code · s is exact), with
 *         s and o exact products of two stored numbers:
 *
 *           s = D · sc   D   f16 per column and group of group_blocks
 *                            blocks: scale16 [p][group][j]
 *                        sc  int8 per column and block, or per half block
 *                            of 16 k values when halves is 2: sub_scale
 *                            [p][b][half][j]; 1 when halves is 0
 *           o = M · m    M   f16, as D: offset16 (no offsets when NULL)
 *                        m   int8 per column and block: sub_offset
 *                            [p][b][j]; 1 when NULL
 *
 *         So a ggml block type keeps its own numbers and adds no rounding:
 *         Q4_0, Q5_0, Q8_0 (and float weights quantised as ggml's Q8_0)
 *         are D per block; Q4_1, Q5_1 D and M per block; Q4_K, Q5_K D and
 *         M = -dmin per super-block of 8 blocks with the 6-bit sc and m of
 *         each block; Q6_K D per super-block and sc per half block
 *         (weights_pack.h).
 *
 * Columns past n (the last panel's padding) and k values past k (the last
 * block's padding) are zero. Every format's element is a well-defined f32
 * value (lms_weights_row); the kernels' results are functions of those
 * values, whatever the ISA that computes them.
 */
#ifndef LMS_WEIGHTS_H
#define LMS_WEIGHTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

#define LMS_PANEL    32 /* columns of W per panel */
#define LMS_Q8_BLOCK 32 /* k values per Q8 scale */

typedef enum {
    LMS_WEIGHTS_F32,
    LMS_WEIGHTS_F16,
    LMS_WEIGHTS_BF16,
    LMS_WEIGHTS_Q8,
} lms_weights_format;

/* Which of Q8's scale and offset arrays a matrix has (weights.h's top). */
typedef struct {
    int32_t group_blocks; /* blocks per D and M: 1, or 8 (a K-quant super-block) */
    int32_t halves;       /* sc per block: 0 (none, sc = 1), 1, or 2 */
    bool offsets;         /* M (offset16) */
    bool sub_offsets;     /* m (sub_offset) */
    int32_t bias;         /* byte = code + bias: 128, or below 64 (LMS_Q8_SMALL_BIAS) */
    bool signed_codes;    /* byte = the code as int8, bias 0 (a tier's, compute_tier.q8_signed) */
} lms_q8_layout;

/* The largest bias of a type whose biased codes stay below 64. */
#define LMS_Q8_SMALL_BIAS 32

/* Where element (k index kk, column j) of a 16-bit panel of a matrix of k
 * columns lies in the panel's k · LMS_PANEL values: the layout a tier
 * owns (compute_tier.bf16_at); NULL is the k-major [kk][j] of the vector
 * tiers. */
typedef size_t lms_panel_at_fn(int32_t k, int32_t kk, int32_t j);

typedef struct {
    lms_weights_format format;
    int32_t n, k;
    const float *f32;         /* F32: [panels][k][LMS_PANEL] */
    const uint16_t *w16;      /* F16/BF16: [panels][k][LMS_PANEL], or as bf16_at says */
    lms_panel_at_fn *bf16_at; /* BF16: the panel's order, NULL for k-major */
    const uint8_t *q8;        /* Q8: [panels][blocks][8][LMS_PANEL][4] */
    const uint16_t *scale16;  /* Q8: D, f16 [panels][groups][LMS_PANEL] */
    const uint16_t *offset16; /* Q8: M, f16 [panels][groups][LMS_PANEL], or NULL */
    const int8_t *sub_scale;  /* Q8: sc [panels][blocks][halves][LMS_PANEL], or NULL */
    const int8_t *sub_offset; /* Q8: m [panels][blocks][LMS_PANEL], or NULL */
    lms_q8_layout layout;     /* Q8 */
    /* Values per activation value: Q8, int8 codes, 1 (int8) or 2 (int8x2);
     * BF16 on a tier with bf16 activations (tier.h), bf16 values, 1 (bf16:
     * x rounded once) or 2 (bf16x2: hi + lo) */
    int32_t x_codes;
} lms_weights;

const char *lms_weights_format_name(lms_weights_format format);

static inline int32_t lms_weights_panels(const lms_weights *w)
{
    return (w->n + LMS_PANEL - 1) / LMS_PANEL;
}

static inline int32_t lms_weights_blocks(const lms_weights *w)
{
    return (w->k + LMS_Q8_BLOCK - 1) / LMS_Q8_BLOCK;
}

/* F16/BF16: where element (kk, column j) lies in its panel. */
static inline size_t lms_weights_w16_at(const lms_weights *w, int32_t kk, int32_t j)
{
    return w->bf16_at ? w->bf16_at(w->k, kk, j) : (size_t)kk * LMS_PANEL + (size_t)j;
}

/* Q8: the code of element (k index i of block pb = panel · blocks + block,
 * column j of the panel). */
static inline int32_t lms_weights_q8_code(const lms_weights *w, size_t pb, int32_t i, size_t j)
{
    const uint8_t byte =
        w->q8[pb * LMS_Q8_BLOCK * LMS_PANEL + (size_t)(i / 4) * LMS_PANEL * 4 + j * 4 + i % 4];
    return w->layout.signed_codes ? (int8_t)byte : (int32_t)byte - w->layout.bias;
}

/* Q8: groups of layout.group_blocks blocks along k (D and M per group). */
static inline int32_t lms_weights_groups(const lms_weights *w)
{
    return (lms_weights_blocks(w) + w->layout.group_blocks - 1) / w->layout.group_blocks;
}

/* Q8: the bytes of its arrays in the order one buffer holds them — q8,
 * scale16, offset16, sub_scale, sub_offset — 0 for an absent one. */
#define LMS_Q8_PARTS 5
void lms_weights_q8_parts(const lms_weights *w, size_t bytes[LMS_Q8_PARTS]);

/* Bytes the matrix occupies. */
size_t lms_weights_bytes(const lms_weights *w);

/* Row r of W (one output feature, k values) as f32: the exact value of
 * every element. */
void lms_weights_row(const lms_weights *w, int32_t r, float *out);

#endif
