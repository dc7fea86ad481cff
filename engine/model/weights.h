/*
 * weights.h — a projection matrix as the compute kernels read it.
 *
 * W is [n × k] (out_features × in_features: y = x·Wᵀ) in one of four
 * formats:
 *
 *   F32   row-major floats, the checkpoint's own layout (in place from the
 *         file when it can be), multiplied by OpenBLAS.
 *   F16,  16-bit floats packed in panels of LMS_PANEL columns: panel p holds
 *   BF16  columns [32p, 32p+32), k-major — element (row 32p+j, col kk) at
 *         [p][kk][j] — so a kernel reads one vector of 32 columns per kk.
 *         The checkpoint's 16-bit type is kept (f16 stays f16: exact).
 *   Q8    signed 8-bit codes in blocks of LMS_Q8_BLOCK along k, value =
 *         scale · code per (column, block). Panel p, block b holds 8 groups
 *         of 4 k values × 32 columns, column-interleaved as VNNI's dot
 *         products read them — byte (g, j, i) is column 32p+j, k index
 *         32b + 4g + i — and each byte is code + 128. Scales are f16, one
 *         per (column, block), [p][b][j]. Q8_0 blocks of a GGUF are exactly
 *         this (same codes, same f16 scales): they are only re-laid out.
 *
 * Columns past n (the last panel's padding) and k values past k (the last
 * block's padding) are zero. Every format's element is a well-defined f32
 * value (lms_weights_row); the kernels' results are functions of those
 * values, whatever the ISA that computes them.
 */
#ifndef LMS_WEIGHTS_H
#define LMS_WEIGHTS_H

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

typedef struct {
    lms_weights_format format;
    int32_t n, k;
    const float *f32;        /* F32: [n × k] */
    const uint16_t *w16;     /* F16/BF16: [panels][k][LMS_PANEL] */
    const uint8_t *q8;       /* Q8: [panels][blocks][8][LMS_PANEL][4] */
    const uint16_t *scale16; /* Q8: f16 [panels][blocks][LMS_PANEL] */
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

/* Bytes the matrix occupies (0 for F32 used in place from a file). */
size_t lms_weights_bytes(const lms_weights *w);

/* Row r of W (one output feature, k values) as f32: the exact value of
 * every element. */
void lms_weights_row(const lms_weights *w, int32_t r, float *out);

#endif
