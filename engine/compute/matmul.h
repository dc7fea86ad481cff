/*
 * matmul.h — the projections of the forward pass: y = x·Wᵀ (+ y), over a
 * fixed grid of tiles.
 *
 * The grid is fixed by the weight (column tiles of MATMUL_COL_TILE) and by
 * the caller's row tile (a multiple of the BLAS row period): every tile is
 * one single-threaded product, the tiles run in parallel. A row's
 * arithmetic then depends only on its index modulo the row period — never
 * on how many rows the batch has nor on the thread count — which exact item
 * isolation needs: a threaded BLAS call splits the rows among its threads
 * at places that move with the row count (OpenBLAS 0.3.21 splits them at
 * any row, and its kernels round a row by where it falls in a register
 * tile).
 */
#ifndef LMS_MATMUL_H
#define LMS_MATMUL_H

#include <stdint.h>

/* Output columns per tile. */
#define MATMUL_COL_TILE 512

/* W: [n × k], row-major (PyTorch's out_features × in_features). */
typedef struct {
    int32_t n, k;
    const float *f32;
} matmul_weight;

typedef enum {
    MATMUL_STORE,      /* y = x·Wᵀ */
    MATMUL_ACCUMULATE, /* y += x·Wᵀ */
} matmul_mode;

/* y[rows × w->n] (=|+=) x[rows × w->k] · Wᵀ. row_tile: rows per tile, a
 * multiple of the row period. */
void matmul(const matmul_weight *w, const float *x, int32_t rows, matmul_mode mode, float *y,
            int32_t row_tile);

#endif
