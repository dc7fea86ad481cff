/*
 * kernels_amx.h — the amx tiers' projections on tiles, of BF16 weights
 * (bf16 tiles) and of Q8 weights of every layout (int8 tiles),
 * written once against the tile layer (tile.h) and included by
 * kernels_amx.c (the instructions) and kernels_amx_emulated.c (the
 * emulation), so that the kernel the hardware runs is the one every CPU
 * tests.
 *
 * BF16. A panel is packed in k pairs (amx_bf16_at, the tier's bf16_at):
 * element (kk, j) at (kk/2)·2·LMS_PANEL + 2j + kk%2, so that 16 pairs of
 * 16 columns are one B tile read in place (rows 128 bytes apart); for an
 * odd k the last k value follows unpaired, k-major. x comes as one bf16
 * value (bf16: hi, x rounded once, as oneDNN and llama.cpp take it) or
 * two (bf16x2: hi + lo, 16 bits of x) (matmul_input.bf16_hi, _lo: zeros
 * past k up to a multiple of 32; the matrix's x_codes).
 * Per 16 rows of x and panel of 32 columns: C0 and C1 (the panel's two
 * halves of 16 columns) start at zero; per chunk of 32 k values in order,
 * A (x's hi, 16 rows × 32 bf16) and B0, B1 (16 pairs × 16 columns) are
 * loaded and C0 += A·B0, C1 += A·B1, then with two values A' (x's lo)
 * and C0 += A'·B0, C1 += A'·B1 (tdpbf16ps); then y = C, or y = y + C. So
 * every element is kernels.h's bf16 sequence.
 *
 * Q8, every layout (weights.h): every GGUF block type and float weights
 * quantised at load. A block of a panel is 8 groups of 4 k values × 32
 * columns, one byte each: the code as a signed byte for full-range codes
 * (layout.signed_codes: Q8_0 and float weights, the tier's q8_signed),
 * else code + bias as an unsigned byte, the type's small bias (Q4_0 8,
 * Q5_0 16, Q6_K 32, Q4_1, Q5_1, Q4_K and Q5_K 0). The bytes are B in
 * place, as ggml's AMX kernels use a block type's quants: columns 0-15
 * and 16-31 are two B tiles of quad rows × 64 bytes (rows 128 bytes
 * apart), 8 quad rows for a block, or 4 for a half block of 16 k values
 * where the matrix has a sub-scale per half (Q6_K). x's codes
 * (matmul_input.codes, as the tier's quantiser wrote them) are A, 16 rows
 * × 32 (16) bytes, read in place (rows one row's blocks apart). Per 16
 * rows of x and panel, per block of 32 k values in order, per half in
 * order where there are two: C0, C1 = A·B0, A·B1 from zero, and with two
 * codes per value (int8x2) C2, C3 = A'·B0, A'·B1 for the lo codes —
 * tdpbssd for signed bytes, tdpbsud (A's bytes signed, B's unsigned) for
 * biased ones, exact integer sums; d = hi sum, or 128 · hi sum + lo sum,
 * less bias × x's code sum over those k values (matmul_input.comp): the
 * exact Σ code_w · code_x (|d| < 2^27); then per element, in f32 as
 * ggml's AMX kernels scale each block, acc = fma((float) d, s · scale_x,
 * acc) with s = D · sc (sc = 1 without sub-scales); after the block,
 * where the matrix has offsets, acc = fma(M · m, sum_x, acc); then y =
 * acc, or y = y + acc. That is kernels.h's Q8 sequence, the one every
 * vector tier computes (the same integer sums, the same f32 operations in
 * the same order): in int8 and int8x2 the amx tiers give the vector
 * tiers' bits in every Q8 layout (tests/unit/test_matmul.c checks each
 * block type against kernels.h's sequence on every tier).
 *
 * Each element depends on its row and column alone. The last rows of x
 * (and for BF16 the last chunk of k) are loaded from a zero-padded copy:
 * no row or k value outside the matrix is read, and no other kernel
 * computes a tail.
 */
#ifndef LMS_KERNELS_AMX_H
#define LMS_KERNELS_AMX_H

#include <math.h>
#include <string.h>

#include "half.h"
#include "kernels.h"
#include "tile.h"
#include "weights.h"

/* Tile numbers: constants, as the instructions encode them. */
#define AMX_C0 0
#define AMX_C1 1
#define AMX_A  2
#define AMX_B0 3
#define AMX_B1 4
#define AMX_A2 5 /* x's lo */
#define AMX_C2 6 /* Q8: the lo codes' sums */
#define AMX_C3 7

enum {
    AMX_ROWS = 16,  /* rows of x per tile */
    AMX_K = 32,     /* bf16 values of k per A row: 16 pairs */
    AMX_HALF = 16,  /* columns per C and B tile */
    AMX_BYTES = 64, /* bytes per tile row */
};

lms_panel_at_fn amx_bf16_at;

/* BF16 (q8_step 0): every tile 16 rows × 64 bytes. Q8: A and A' 16 rows ×
 * q8_step codes (amx_q8_step), B q8_step / 4 quad rows × 64 bytes, C 16 ×
 * 16 int32. */
static inline void amx_configure(int32_t q8_step)
{
    tile_config cfg = {.palette = 1};
    for (int t = AMX_C0; t <= (q8_step ? AMX_C3 : AMX_A2); t++) {
        cfg.rows[t] = AMX_ROWS;
        cfg.colsb[t] = AMX_BYTES;
    }
    if (q8_step) {
        cfg.colsb[AMX_A] = cfg.colsb[AMX_A2] = (uint16_t)q8_step;
        cfg.rows[AMX_B0] = cfg.rows[AMX_B1] = (uint8_t)(q8_step / 4);
    }
    tile_configure(&cfg);
}

/* n_rows × n_cols of y (row stride ldy) from c: y = c, or y = y + c. */
static inline void amx_put(const float c[AMX_ROWS][LMS_PANEL], int32_t n_rows, int32_t n_cols,
                           float *y, size_t ldy, kernel_mode mode)
{
    for (int32_t i = 0; i < n_rows; i++) {
        float *yi = y + (size_t)i * ldy;
        for (int32_t j = 0; j < n_cols; j++)
            yi[j] = mode == KERNEL_ACCUMULATE ? yi[j] + c[i][j] : c[i][j];
    }
}

/* A for rows [r, r + 16) of x's plane (hi or lo), chunk ch: in place, or,
 * past x's last row, a copy with zero rows; *stride in bytes. */
static inline const uint16_t *amx_a(const matmul_input *in, const uint16_t *plane, int32_t r,
                                    int32_t ch, uint16_t tail[AMX_ROWS][AMX_K], size_t *stride)
{
    const int32_t ld = kernel_bf16_stride(in->k);
    const uint16_t *a = plane + (size_t)r * ld + (size_t)ch * AMX_K;
    *stride = (size_t)ld * sizeof *a;
    if (r + AMX_ROWS <= in->rows) return a;
    memset(tail, 0, AMX_ROWS * sizeof *tail);
    for (int32_t i = 0; i < in->rows - r; i++)
        memcpy(tail[i], a + (size_t)i * ld, sizeof *tail);
    *stride = sizeof *tail;
    return tail[0];
}

/* B for chunk ch, columns [16h, 16h + 16) of a panel: in place where the
 * chunk's 16 pairs are whole, else a copy in pairs with zeros past k. */
static inline const uint16_t *amx_b(const uint16_t *panel, int32_t k, int32_t ch, int h,
                                    uint16_t tail[AMX_K / 2][2 * AMX_HALF], size_t *stride)
{
    if ((ch + 1) * AMX_K <= (k & ~1)) {
        *stride = 2 * LMS_PANEL * sizeof *panel;
        return panel + (size_t)ch * (AMX_K / 2) * 2 * LMS_PANEL + 2 * AMX_HALF * h;
    }
    for (int p = 0; p < AMX_K / 2; p++)
        for (int j = 0; j < AMX_HALF; j++)
            for (int e = 0; e < 2; e++) {
                const int32_t kk = ch * AMX_K + 2 * p + e;
                tail[p][2 * j + e] = kk < k ? panel[amx_bf16_at(k, kk, AMX_HALF * h + j)] : 0;
            }
    *stride = sizeof *tail;
    return tail[0];
}

/* Rows [r0, r1) × columns [c0, c1) of y = x·Wᵀ for a BF16 matrix (the
 * block function's contract, kernels.h). */
static inline void amx_bf16_block(const lms_weights *w, const matmul_input *in, int32_t r0,
                                  int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                                  kernel_mode mode)
{
    const int32_t k = w->k, chunks = kernel_bf16_stride(k) / AMX_K;
    uint16_t a_tail[2][AMX_ROWS][AMX_K], b_tail[2][AMX_K / 2][2 * AMX_HALF];
    float c[AMX_ROWS][LMS_PANEL];
    amx_configure(0);
    for (int32_t r = r0; r < r1; r += AMX_ROWS) {
        const int32_t n_rows = r1 - r < AMX_ROWS ? r1 - r : AMX_ROWS;
        for (int32_t col = c0; col < c1; col += LMS_PANEL) {
            const uint16_t *panel = w->w16 + (size_t)(col / LMS_PANEL) * k * LMS_PANEL;
            tile_zero(AMX_C0);
            tile_zero(AMX_C1);
            for (int32_t ch = 0; ch < chunks; ch++) {
                size_t sa, sa2, sb0, sb1;
                const uint16_t *a = amx_a(in, in->bf16_hi, r, ch, a_tail[0], &sa);
                const uint16_t *b0 = amx_b(panel, k, ch, 0, b_tail[0], &sb0);
                const uint16_t *b1 = amx_b(panel, k, ch, 1, b_tail[1], &sb1);
                tile_load(AMX_A, a, sa);
                tile_load(AMX_B0, b0, sb0);
                tile_load(AMX_B1, b1, sb1);
                tile_dpbf16ps(AMX_C0, AMX_A, AMX_B0);
                tile_dpbf16ps(AMX_C1, AMX_A, AMX_B1);
                if (w->x_codes != 2) continue;
                const uint16_t *a2 = amx_a(in, in->bf16_lo, r, ch, a_tail[1], &sa2);
                tile_load(AMX_A2, a2, sa2);
                tile_dpbf16ps(AMX_C0, AMX_A2, AMX_B0);
                tile_dpbf16ps(AMX_C1, AMX_A2, AMX_B1);
            }
            tile_store(AMX_C0, c[0], sizeof c[0]);
            tile_store(AMX_C1, c[0] + AMX_HALF, sizeof c[0]);
            amx_put(c, n_rows, c1 - col < LMS_PANEL ? c1 - col : LMS_PANEL,
                    y + (size_t)(r - r0) * ldy + (col - c0), ldy, mode);
        }
    }
    tile_release();
}

/* Q8: k values per tile product: a block, or a half block where the
 * matrix has a sub-scale per half (Q6_K). */
static inline int32_t amx_q8_step(const lms_weights *w)
{
    return w->layout.halves == 2 ? LMS_Q8_BLOCK / 2 : LMS_Q8_BLOCK;
}

/* A for rows [r, r + 16) of x's codes (codes per value), the step bytes
 * from k value first of block b, the hi (lo = 0) or the lo codes (lo =
 * 1): in place (a row's blocks one after the other, each its hi then its
 * lo codes: kernels.h q8_act_row), or, past x's last row, a copy with
 * zero rows; *stride in bytes. */
static inline const int8_t *amx_q8_a(const matmul_input *in, int32_t blocks, int codes, int32_t r,
                                     int32_t b, int32_t first, int32_t step, int lo,
                                     int8_t tail[AMX_ROWS][LMS_Q8_BLOCK], size_t *stride)
{
    const size_t row_bytes = (size_t)blocks * 2 * LMS_Q8_BLOCK; /* matmul.c's scratch */
    const int8_t *a =
        in->codes + (size_t)r * row_bytes + ((size_t)b * codes + lo) * LMS_Q8_BLOCK + first;
    *stride = row_bytes;
    if (r + AMX_ROWS <= in->rows) return a;
    memset(tail, 0, AMX_ROWS * sizeof *tail);
    for (int32_t i = 0; i < in->rows - r; i++)
        memcpy(tail[i], a + (size_t)i * row_bytes, (size_t)step);
    *stride = sizeof *tail;
    return tail[0];
}

/* hi[i][j] (and with two codes per value lo[i][j]): the exact sums of x's
 * hi (lo) codes times the weights' bytes over the step k values from
 * first of block b, rows [r, r + 16), the panel's 32 columns (block: the
 * block's bytes). The bytes are B in place, loaded once: quads of k values
 * per dword as the panel keeps them, columns 0-15 and 16-31 two tiles 128
 * bytes a row apart. Signed codes by tdpbssd; code + bias by tdpbsud (x's
 * codes signed in A, the bytes unsigned in B). */
static inline void amx_q8_sums(const lms_weights *w, const matmul_input *in, const uint8_t *block,
                               int32_t r, int32_t b, int32_t first,
                               int8_t tail[2][AMX_ROWS][LMS_Q8_BLOCK],
                               int32_t hi[AMX_ROWS][LMS_PANEL], int32_t lo[AMX_ROWS][LMS_PANEL])
{
    const int32_t step = amx_q8_step(w), blocks = lms_weights_blocks(w), codes = w->x_codes;
    const size_t b_stride = 4 * LMS_PANEL;
    const uint8_t *b0 = block + (size_t)(first / 4) * b_stride;
    size_t sa, sa2;
    const int8_t *a = amx_q8_a(in, blocks, codes, r, b, first, step, 0, tail[0], &sa);
    tile_load(AMX_B0, b0, b_stride);
    tile_load(AMX_B1, b0 + 4 * AMX_HALF, b_stride);
    tile_load(AMX_A, a, sa);
    tile_zero(AMX_C0);
    tile_zero(AMX_C1);
    if (codes == 2) {
        const int8_t *a2 = amx_q8_a(in, blocks, codes, r, b, first, step, 1, tail[1], &sa2);
        tile_load(AMX_A2, a2, sa2);
        tile_zero(AMX_C2);
        tile_zero(AMX_C3);
    }
    /* tile numbers are constants of the instructions: each product spelt out */
    if (w->layout.signed_codes) {
        tile_dpbssd(AMX_C0, AMX_A, AMX_B0);
        tile_dpbssd(AMX_C1, AMX_A, AMX_B1);
        if (codes == 2) {
            tile_dpbssd(AMX_C2, AMX_A2, AMX_B0);
            tile_dpbssd(AMX_C3, AMX_A2, AMX_B1);
        }
    } else {
        tile_dpbsud(AMX_C0, AMX_A, AMX_B0);
        tile_dpbsud(AMX_C1, AMX_A, AMX_B1);
        if (codes == 2) {
            tile_dpbsud(AMX_C2, AMX_A2, AMX_B0);
            tile_dpbsud(AMX_C3, AMX_A2, AMX_B1);
        }
    }
    tile_store(AMX_C0, hi[0], sizeof hi[0]);
    tile_store(AMX_C1, hi[0] + AMX_HALF, sizeof hi[0]);
    if (codes == 2) {
        tile_store(AMX_C2, lo[0], sizeof lo[0]);
        tile_store(AMX_C3, lo[0] + AMX_HALF, sizeof lo[0]);
    }
}

/* Rows [r0, r1) × columns [c0, c1) of y = x·Wᵀ for a Q8 matrix of any
 * layout (the block function's contract, kernels.h): per block, and per
 * half where the matrix has a sub-scale per half, the tile sums less bias
 * × x's code sum, then kernels.h's f32 steps. */
static inline void amx_q8_block(const lms_weights *w, const matmul_input *in, int32_t r0,
                                int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                                kernel_mode mode)
{
    const int32_t blocks = lms_weights_blocks(w), groups = lms_weights_groups(w);
    const int32_t codes = w->x_codes, step = amx_q8_step(w), bias = w->layout.bias;
    int8_t a_tail[2][AMX_ROWS][LMS_Q8_BLOCK];
    int32_t hi[AMX_ROWS][LMS_PANEL], lo[AMX_ROWS][LMS_PANEL];
    float acc[AMX_ROWS][LMS_PANEL], s[LMS_PANEL];
    amx_configure(step);
    for (int32_t r = r0; r < r1; r += AMX_ROWS) {
        const int32_t n_rows = r1 - r < AMX_ROWS ? r1 - r : AMX_ROWS;
        for (int32_t col = c0; col < c1; col += LMS_PANEL) {
            const size_t p = (size_t)(col / LMS_PANEL);
            memset(acc, 0, sizeof acc);
            for (int32_t b = 0; b < blocks; b++) {
                const size_t pb = p * (size_t)blocks + (size_t)b;
                const size_t pg = p * (size_t)groups + (size_t)(b / w->layout.group_blocks);
                const uint16_t *d = w->scale16 + pg * LMS_PANEL;
                for (int32_t first = 0; first < LMS_Q8_BLOCK; first += step) {
                    const int32_t h = first / step;
                    amx_q8_sums(w, in, w->q8 + pb * LMS_Q8_BLOCK * LMS_PANEL, r, b, first, a_tail,
                                hi, lo);
                    /* s = D · sc, exact */
                    const int8_t *sc =
                        w->sub_scale
                            ? w->sub_scale + (pb * (size_t)w->layout.halves + h) * LMS_PANEL
                            : NULL;
                    for (int32_t j = 0; j < LMS_PANEL; j++)
                        s[j] = sc ? lms_f16_to_f32(d[j]) * (float)sc[j] : lms_f16_to_f32(d[j]);
                    for (int32_t i = 0; i < n_rows; i++) {
                        const size_t xb = (size_t)(r + i) * blocks + (size_t)b;
                        /* x's code sum over these k values, times bias: the bias's share */
                        const int32_t *comp = in->comp + 2 * xb;
                        const int32_t biased =
                            bias * (step == LMS_Q8_BLOCK ? comp[0] + comp[1] : comp[h]);
                        const float sx = in->scales[xb];
                        for (int32_t j = 0; j < LMS_PANEL; j++) {
                            const int32_t sum =
                                (codes == 2 ? 128 * hi[i][j] + lo[i][j] : hi[i][j]) - biased;
                            acc[i][j] = fmaf((float)sum, s[j] * sx, acc[i][j]);
                        }
                    }
                }
                if (!w->offset16) continue;
                /* o = M · m, exact */
                const uint16_t *m = w->offset16 + pg * LMS_PANEL;
                const int8_t *mo = w->sub_offset ? w->sub_offset + pb * LMS_PANEL : NULL;
                for (int32_t j = 0; j < LMS_PANEL; j++)
                    s[j] = mo ? lms_f16_to_f32(m[j]) * (float)mo[j] : lms_f16_to_f32(m[j]);
                for (int32_t i = 0; i < n_rows; i++) {
                    const float sum_x = in->sums[(size_t)(r + i) * blocks + b];
                    for (int32_t j = 0; j < LMS_PANEL; j++)
                        acc[i][j] = fmaf(s[j], sum_x, acc[i][j]);
                }
            }
            amx_put(acc, n_rows, c1 - col < LMS_PANEL ? c1 - col : LMS_PANEL,
                    y + (size_t)(r - r0) * ldy + (col - c0), ldy, mode);
        }
    }
    tile_release();
}

/* The tier's block function: BF16 and Q8 matrices on tiles, F32 and F16
 * ones through the tier's vector kernels (matmul_panels). */
#define DEFINE_AMX_BLOCK(name)                                                                     \
    void name(const struct compute_tier *tier, const lms_weights *w, const matmul_input *in,       \
              int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,                \
              kernel_mode mode)                                                                    \
    {                                                                                              \
        if (w->format == LMS_WEIGHTS_BF16)                                                         \
            amx_bf16_block(w, in, r0, r1, c0, c1, y, ldy, mode);                                   \
        else if (w->format == LMS_WEIGHTS_Q8)                                                      \
            amx_q8_block(w, in, r0, r1, c0, c1, y, ldy, mode);                                     \
        else                                                                                       \
            matmul_panels(tier, w, in, r0, r1, c0, c1, y, ldy, mode);                              \
    }

#endif
