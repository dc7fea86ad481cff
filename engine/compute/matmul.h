/*
 * matmul.h — the projections of the forward pass: y = x·Wᵀ (+ y) for W in
 * any format of weights.h, over a fixed grid of tiles.
 *
 * A product is a grid of tiles, each computed on one thread by the tier's
 * tile function (kernels.h), the tiles in parallel, as many as the threads
 * need. Every format runs the tier's kernels, which compute every element
 * by a sequence of operations fixed by its row alone, so a row's result
 * depends neither on the batch around it nor on the grid or the thread
 * count. x is quantised for Q8 once per call (for all the call's
 * products), per row and block of 32, in one or two codes per value as the
 * matrix says (weights.h x_codes, kernels.h), and rounded to bf16 once per
 * call for BF16 matrices on a tier with bf16 activations (tier.h), to one
 * or two bf16 values per value as the matrix says (x_codes).
 */
#ifndef LMS_MATMUL_H
#define LMS_MATMUL_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"
#include "lmscore.h"
#include "tier.h"
#include "weights.h"

/* Output columns per tile at most: a multiple of LMS_PANEL. */
#define MATMUL_COL_TILE 512

/* How an engine multiplies, for its life. */
typedef struct {
    const compute_tier *tier;
} matmul_config;

/* Room to quantise up to rows × k of x (Q8 weights), or round it to bf16. */
typedef struct matmul_scratch matmul_scratch;
matmul_scratch *matmul_scratch_create(int32_t rows, int32_t max_k);
void matmul_scratch_free(matmul_scratch *s);

/* Prepares x[rows × w->k] for w: quantises it into s for Q8 weights, rounds
 * it to bf16 into s for BF16 weights on a tier with bf16 activations. */
void matmul_prepare(const matmul_config *cfg, const lms_weights *w, const float *x, int32_t rows,
                    matmul_scratch *s, matmul_input *in);

/* Rows [r0, r1) × columns [c0, c1) of y = x·Wᵀ (KERNEL_STORE) or y +=
 * x·Wᵀ (KERNEL_ACCUMULATE) on the calling thread, through the tier's tile
 * function (kernels.h's matmul_block_fn). */
void matmul_block(const matmul_config *cfg, const lms_weights *w, const matmul_input *in,
                  int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                  kernel_mode mode);

/* y[rows × w->n] (= or += by mode) x[rows × w->k] · Wᵀ over the tile grid,
 * on the OpenMP threads. s: room for rows × w->k (only Q8 uses it). */
void matmul(const matmul_config *cfg, const lms_weights *w, const float *x, int32_t rows,
            kernel_mode mode, float *y, matmul_scratch *s);

/* One product of matmul_many: y (=|+=) x · Wᵀ. */
typedef struct {
    const lms_weights *w;
    float *y;
    kernel_mode mode;
} matmul_product;

#define MATMUL_MAX_PRODUCTS 3

/* matmul for n (≤ MATMUL_MAX_PRODUCTS) products of the same x (every w of
 * the same k, formats free, the Q8 ones with the same x_codes): x is
 * quantised once for all, and rounded to bf16 once for all BF16 ones (to
 * two values where one of them takes two), and the tiles of all run in one parallel loop.
 * Each element gets the bits matmul gives it. */
void matmul_many(const matmul_config *cfg, const matmul_product *p, int n, const float *x,
                 int32_t rows, matmul_scratch *s);

#endif
