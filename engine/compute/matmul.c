/*
 * matmul.c — tiled projections (see matmul.h).
 */
#include "matmul.h"

#include <cblas.h>
#include <omp.h>

static int32_t ceil_div(int32_t a, int32_t b)
{
    return (a + b - 1) / b;
}

void matmul(const matmul_weight *w, const float *x, int32_t rows, matmul_mode mode, float *y,
            int32_t row_tile)
{
    const int32_t n = w->n, k = w->k;
    const int32_t col_tiles = ceil_div(n, MATMUL_COL_TILE);
    const int64_t tiles = (int64_t)ceil_div(rows, row_tile) * col_tiles;
    const float beta = mode == MATMUL_ACCUMULATE ? 1.0f : 0.0f;
    /* Always inside a parallel region, even for one tile: OpenBLAS runs
     * single-threaded there, so every tile is computed the same way. */
#pragma omp parallel for schedule(dynamic, 1)
    for (int64_t t = 0; t < tiles; t++) {
        const int32_t r0 = (int32_t)(t / col_tiles) * row_tile;
        const int32_t c0 = (int32_t)(t % col_tiles) * MATMUL_COL_TILE;
        const int32_t m = rows - r0 < row_tile ? rows - r0 : row_tile;
        const int32_t nc = n - c0 < MATMUL_COL_TILE ? n - c0 : MATMUL_COL_TILE;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, nc, k, 1.0f, x + (size_t)r0 * k, k,
                    w->f32 + (size_t)c0 * k, k, beta, y + (size_t)r0 * n + c0, n);
    }
}
