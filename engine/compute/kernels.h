/*
 * kernels.h — the micro-kernels under matmul.c: a few rows of x against
 * one panel (LMS_PANEL columns) of a packed 16-bit or Q8 matrix.
 *
 * Each tier (kernels_avx512.c, kernels_avx2.c, and kernels_generic.c for
 * f32 on CPUs without AVX2) computes every output element with the same
 * sequence of IEEE operations:
 *
 *   f32:    acc = 0, or y when resuming; acc = fma(x[kk], w[kk], acc) for
 *           kk = 0 .. k-1; y = acc (a chain over k split into several
 *           resumed calls is the same chain)
 *   16-bit: acc = 0; acc = fma(x[kk], w[kk], acc) for kk = 0 .. k-1
 *   Q8:     acc = 0; per block b in order:
 *             per half h in order when the matrix has sub-scales per half
 *             block (16 k values), else once over the whole block:
 *               d   = exact integer sum of code_w · (128 · hi_x + lo_x)
 *               acc = fma((float)d, s_w · scale_x[b], acc)
 *             then, when the matrix has offsets:
 *               acc = fma(o_w, sum_x[b], acc)
 *             with s_w = D · sc, o_w = M · m (weights.h; exact products)
 *             and sum_x = scale_x · (float)(the block's exact sum of
 *             128 · hi_x + lo_x), one f32 product (q8_act_row.sum)
 *   then    y = acc, or y = y + acc when accumulating
 *
 * so the tiers give the same bits and a row's result depends on nothing
 * but that row (no reduction crosses rows, no order depends on the batch).
 */
#ifndef LMS_KERNELS_H
#define LMS_KERNELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* One row of x, quantised for Q8 weights: per block of LMS_Q8_BLOCK values,
 * two signed codes per value, hi and lo, with x ≈ (128 · hi + lo) · scale:
 * hi to within half a step of the block's largest magnitude over 127, lo
 * the rest to within 1/256 of that step (15 bits of the value in all). */
typedef struct {
    const int8_t *codes; /* [blocks × 2 × LMS_Q8_BLOCK]: a block's hi codes, then its lo */
    const float *scale;  /* [blocks] */
    const int32_t *comp; /* [blocks × 2]: -128 × the sum of 128 · hi + lo over each half
                          * block, values 0-15 and 16-31 (for u8·s8 dot products) */
    const float *sum;    /* [blocks]: scale · the block's sum of 128 · hi + lo (x's block
                          * sum as quantised), for matrices with offsets */
    const int16_t *wide; /* [blocks × LMS_Q8_BLOCK]: 128 · hi + lo, for the kernels that
                          * multiply 16-bit words (q8_kernel_avx2); else NULL */
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
} q8_panel;

/* rows: up to rows_per_call pointers (or q8_act_rows); only the first
 * n_rows results are stored, the others may repeat a row. y: row i of the
 * result at y + i·ldy, n_cols (≤ LMS_PANEL) columns. */
/* w: element (kk, column j) at w[kk·ldw + j]; columns past n_cols are not
 * read. */
typedef void f32_kernel_fn(const float *const *x, int32_t k, const float *w, size_t ldw, float *y,
                           size_t ldy, int32_t n_rows, int32_t n_cols, bool resume);

/* One row of x into q8_act_row blocks (the last block's missing values are
 * zeros): amax = the block's largest |x| (NaN skipped), d = amax / 127,
 * id = d ? 1/d : 0;
 *   hi = rne(clamp(x · id, -127, 127)), r = x - hi · d (no fma),
 *   lo = rne(clamp(r · (id · 128), -127, 127)),
 *   scale = d · 2^-7, comp = -128 × Σ (128 · hi + lo) per half block
 * (rne: round to nearest even; a NaN clamps to -127). */
typedef void q8_quantize_fn(const float *x, int32_t k, int32_t blocks, int8_t *codes, float *scales,
                            int32_t *comp);

typedef void w16_kernel_fn(const float *const *x, int32_t k, const uint16_t *panel, bool bf16,
                           float *y, size_t ldy, int32_t n_rows, int32_t n_cols, bool accumulate);
typedef void q8_kernel_fn(const q8_act_row *x, int32_t blocks, const q8_panel *w, float *y,
                          size_t ldy, int32_t n_rows, int32_t n_cols, bool accumulate);

/* Rows per call of each kernel. */
#define F32_ROWS_AVX512  8
#define F32_ROWS_AVX2    6
#define F32_ROWS_GENERIC 4
#define W16_ROWS_AVX512  8
#define W16_ROWS_AVX2    6
#define Q8_ROWS_AVX512   4
#define Q8_ROWS_AVX2     4

/* AVX-512 F/BW/VL (+ VNNI for Q8) and AVX2/FMA/F16C: the caller checks the
 * CPU (cpu.h) before calling one. */
f32_kernel_fn f32_kernel_avx512, f32_kernel_avx2, f32_kernel_generic;
w16_kernel_fn w16_kernel_avx512, w16_kernel_avx2;
q8_kernel_fn q8_kernel_avx512_vnni, q8_kernel_avx2;
q8_quantize_fn q8_quantize_avx512, q8_quantize_avx2;

#endif
