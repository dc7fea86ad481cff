/*
 * kernels.h — what a compute tier (tier.h) implements: the micro-kernels
 * under matmul.c and attention.c, a few rows of x against one panel
 * (LMS_PANEL columns) of a packed f32, 16-bit or Q8 matrix, and the
 * activation quantiser.
 *
 * Every tier computes every output element with one of these sequences of
 * IEEE operations, fixed by the element's row and column alone:
 *
 *   f32, 16-bit (dense), on every tier but for BF16 matrices on a tier
 *   with bf16 activations (tier.h):
 *           acc = y when resuming, else 0;
 *           acc = fma(x[kk], w[kk], acc) for kk = 0 .. k-1 (w widened to
 *           f32 exactly); then y = acc, or y = y + acc when accumulating
 *           (a chain over k split into several resumed calls is the same
 *           chain)
 *   Q8:     acc = 0; per block b in order:
 *             per half h in order when the matrix has sub-scales per half
 *             block (16 k values), else once over the whole block:
 *               d   = exact integer sum of code_w · code_x
 *               acc = fma((float)d, s_w · scale_x[b], acc)
 *             then, when the matrix has offsets:
 *               acc = fma(o_w, sum_x[b], acc)
 *             with s_w = D · sc, o_w = M · m (weights.h; exact products),
 *             code_x = hi_x with one code per value and 128 · hi_x + lo_x
 *             with two, and sum_x = scale_x · (float)(the block's exact sum
 *             of code_x), one f32 product (q8_act_row.sum)
 *           then y = acc, or y = y + acc when accumulating
 *
 *   BF16 on the amx tiers:
 *           x[kk] as hi = bf16(x[kk]) (nearest even) with one value per
 *           activation value (x_codes 1: bf16), or hi + lo, lo =
 *           bf16(x[kk] - hi) (0 where hi is not finite), with two
 *           (bf16x2); zeros past k up to a multiple of 32; acc = 0; per
 *           chunk of 32 k values in order, for hi (then lo): tdpbf16ps'
 *           step as the SDM defines it
 *           (tile_emulated.c: chains of the even and of the odd k values
 *           from 0, fused multiply-adds with DAZ and FTZ, their sum added
 *           to acc); then y = acc, or y = y + acc when accumulating
 *
 *   BF16 on the avx512-bf16 tier:
 *           x[kk] as hi, or hi + lo, as above, zeros past k; acc = 0; per
 *           pair p of k values (2p, 2p + 1; a weight past k is 0) in
 *           order, for hi (then lo): VDPBF16PS' step as the SDM defines it
 *           (kernels_avx512_bf16_reference.c: the odd product, then the
 *           even one, each a fused multiply-add into acc with DAZ and FTZ);
 *           then y = acc, or y = y + acc when accumulating
 *
 * so the tiers that share a sequence give the same bits, and on every
 * tier a row's result depends on nothing but that row (no reduction
 * crosses rows, no order depends on the batch): within a tier every
 * algorithm and batch gives a row the same bits. Across the two dense
 * sequences results differ within the precision gates (docs/engine.md).
 * (A self-check at start-up holds a tier with bf16 activations to its own
 * sequence: tier_proof.c.)
 */
#ifndef LMS_KERNELS_H
#define LMS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "weights.h"

/* Which of the sequences above a tier multiplies BF16 matrices with. */
typedef enum {
    KERNEL_BF16_F32 = 0,   /* the dense sequence: x in f32 (every vector tier) */
    KERNEL_BF16_TDPBF16PS, /* x as hi + lo bf16, tdpbf16ps per chunk of 32 (the amx tiers) */
    KERNEL_BF16_VDPBF16PS, /* x as hi + lo bf16, vdpbf16ps per pair (avx512-bf16) */
} kernel_bf16_sequence;

/* What a kernel does with y. */
typedef enum {
    KERNEL_STORE,      /* y = acc */
    KERNEL_ACCUMULATE, /* y = y + acc */
    KERNEL_RESUME,     /* acc starts at y: the chain of an earlier call goes on */
} kernel_mode;

/* One row of x, quantised for Q8 weights: per block of LMS_Q8_BLOCK values
 * a signed code hi per value, x ≈ hi · scale, hi to within half a step of
 * the block's largest magnitude over 127 (precision int8: ggml's Q8_0
 * activations); or two, hi and lo, x ≈ (128 · hi + lo) · scale, lo the
 * rest to within 1/256 of that step (precision int8x2: 15 bits). */
typedef struct {
    const int8_t *codes; /* [blocks × codes × LMS_Q8_BLOCK]: a block's hi codes (then its lo) */
    const float *scale;  /* [blocks] */
    const int32_t *comp; /* [blocks × 2]: the sum of code_x over each half block, values
                          * 0-15 and 16-31 (bias × it cancels the weights' bias) */
    const float *sum;    /* [blocks]: scale · the block's sum of code_x (x's block sum as
                          * quantised), for matrices with offsets */
    const int16_t *wide; /* [blocks × LMS_Q8_BLOCK]: 128 · hi + lo, for the two-code kernels
                          * that multiply 16-bit words (q8_kernels.wide); else NULL */
} q8_act_row;

/* One panel of a Q8 matrix (weights.h), each array at the panel's first
 * block (or group). */
typedef struct {
    const uint8_t *codes;     /* [blocks][8][LMS_PANEL][4] */
    const uint16_t *scale;    /* D: [groups][LMS_PANEL] */
    const uint16_t *offset;   /* M: [groups][LMS_PANEL], or NULL */
    const int8_t *sub_scale;  /* sc: [blocks][halves][LMS_PANEL], or NULL */
    const int8_t *sub_offset; /* m: [blocks][LMS_PANEL], or NULL */
    int32_t group_blocks, halves;
    int32_t bias; /* the codes' bytes are code + bias */
} q8_panel;

/* Does the panel hold D per block and nothing else (Q8_0, and float
 * weights quantised at load)? The kernels compile a loop without the other
 * layouts' steps for it. */
static inline bool q8_panel_plain(const q8_panel *w)
{
    return w->group_blocks == 1 && !w->sub_scale && !w->offset;
}

/* rows: up to the kernel's rows per call pointers (or q8_act_rows); only
 * the first n_rows results are stored, the others may repeat a row. y: row
 * i of the result at y + i·ldy, n_cols (≤ LMS_PANEL) columns. */

/* w: element (kk, column j) at w[kk·ldw + j], LMS_PANEL columns readable
 * (a packed panel, zeros past its last column); columns past n_cols are
 * not stored. */
typedef void f32_kernel_fn(const float *const *x, int32_t k, const float *w, size_t ldw, float *y,
                           size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode);

/* panel: a packed 16-bit panel, element (kk, column j) at panel[kk·LMS_PANEL
 * + j], f16 or bf16 bits; all LMS_PANEL columns are read. */
typedef void w16_kernel_fn(const float *const *x, int32_t k, const uint16_t *panel, bool bf16,
                           float *y, size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode);

/* out[i] = x[i] clamped to ±65504, as f16 (round to nearest even; a NaN
 * stays a NaN, its payload's top bits kept as vcvtps2ph keeps them), i <
 * n: keys and values of 16-bit attention. */
typedef void f16_pack_fn(const float *x, uint16_t *out, size_t n);

/* out[i] = h[i] widened to f32 (exact; vcvtph2ps), i < n: 16-bit
 * attention's keys and values as its f32 kernel multiplies them. */
typedef void f16_widen_fn(const uint16_t *h, float *out, size_t n);

/* mode: KERNEL_STORE or KERNEL_ACCUMULATE. */
typedef void q8_kernel_fn(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                          size_t ldy, int32_t n_rows, int32_t n_cols, kernel_mode mode);

/* One row of x into q8_act_row blocks (the last block's missing values are
 * zeros): amax = the block's largest |x| (NaN skipped), d = amax / 127,
 * id = d ? 1/d : 0;
 *   hi = rne(clamp(x · id, -127, 127))
 * and with one code scale = d, comp = Σ hi per half block; with two
 *   r = x - hi · d (no fma), lo = rne(clamp(r · (id · 128), -127, 127)),
 *   scale = d · 2^-7, comp = Σ (128 · hi + lo) per half block
 * (rne: round to nearest even; a NaN clamps to -127). */
typedef void q8_quantize_fn(const float *x, int32_t k, int32_t blocks, int8_t *codes, float *scales,
                            int32_t *comp);

/* A tier's kernels of one kind: the function, its rows per call (at most
 * KERNEL_MAX_ROWS), and the instruction set whose code it is (for
 * lms_model_info.kernels). */
#define KERNEL_MAX_ROWS 16
typedef struct {
    f32_kernel_fn *fn;
    int32_t rows;
    const char *isa;
} f32_kernels;

typedef struct {
    w16_kernel_fn *fn;
    int32_t rows;
    const char *isa;
    f16_pack_fn *to_f16;
    f16_widen_fn *to_f32;
} w16_kernels;

typedef struct {
    q8_kernel_fn *fn;
    int32_t rows;
    const char *isa;
    q8_quantize_fn *quantize;
    bool wide; /* the kernel reads q8_act_row.wide */
} q8_kernels;

/* x as a matrix's kernels read it (matmul_prepare). */
typedef struct {
    const float *x; /* [rows × k] */
    int32_t rows, k;
    const int8_t *codes; /* Q8: [rows × blocks × 2 × LMS_Q8_BLOCK] (q8_act_row) */
    const float *scales; /* Q8: [rows × blocks] */
    const int32_t *comp; /* Q8: [rows × blocks × 2] */
    const float *sums;   /* Q8 with offsets: [rows × blocks] (q8_act_row.sum) */
    const int16_t *wide; /* Q8 when the kernels are wide: [rows × blocks × LMS_Q8_BLOCK] */
    /* BF16 weights on a tier with bf16 activations: x as hi = x rounded
     * to bf16 (nearest even) and, for a matrix with two values per
     * activation value (x_codes 2), lo = the rest, x - hi, rounded to bf16
     * (0 where hi is not finite; else bf16_lo is NULL), each [rows ×
     * kernel_bf16_stride(k)] with zeros past k */
    const uint16_t *bf16_hi, *bf16_lo;
} matmul_input;

/* The row stride of matmul_input.bf16: k rounded up to a tile's 32 values. */
static inline int32_t kernel_bf16_stride(int32_t k)
{
    return (k + 31) / 32 * 32;
}

struct compute_tier;

/* Rows [r0, r1) × columns [c0, c1) of y = x·Wᵀ (mode: KERNEL_STORE or
 * KERNEL_ACCUMULATE) on the calling thread: c0 a multiple of LMS_PANEL, y
 * the result's element (r0, c0) with row stride ldy. The unit a tier
 * implements when it multiplies whole tiles (a matrix engine); the vector
 * tiers use matmul_panels. */
typedef void matmul_block_fn(const struct compute_tier *tier, const lms_weights *w,
                             const matmul_input *in, int32_t r0, int32_t r1, int32_t c0, int32_t c1,
                             float *y, size_t ldy, kernel_mode mode);

/* The tile as panels of columns × groups of rows through the tier's
 * micro-kernels (matmul.c). */
matmul_block_fn matmul_panels;

/* BF16 and Q8 matrices (every Q8 layout) on AMX tiles, the others through
 * matmul_panels: on the instructions (kernels_amx.c) or on their
 * emulation (kernels_amx_emulated.c). */
matmul_block_fn matmul_amx, matmul_amx_emulated;

/* BF16 matrices by vdpbf16ps, the others through matmul_panels
 * (kernels_avx512_bf16.c); and the same with VDPBF16PS in plain C, as the
 * SDM defines it (kernels_avx512_bf16_reference.c). */
matmul_block_fn matmul_avx512_bf16, matmul_avx512_bf16_reference;

/* One lane of VDPBF16PS as the SDM defines it: acc plus the products of
 * the bf16 pairs a and b (even element in the low half), the odd one
 * first, each a fused multiply-add with DAZ and FTZ, RNE. */
float kernel_vdpbf16ps_lane(float acc, uint32_t a, uint32_t b);

#endif
