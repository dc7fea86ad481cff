/*
 * blas_probe.h — how far OpenBLAS's sgemm results are position-invariant,
 * for the f32 projections (matmul.h).
 *
 * OpenBLAS computes a row of C = A·Bᵀ with arithmetic that depends on where
 * that row falls in the kernel's register tile (rows 6..11 of every 12 round
 * differently from rows 0..5 on the Haswell kernel). Exact item isolation
 * needs an item's rows to go through identical arithmetic whatever the other
 * items are, so the packer starts every segment at a row index that is a
 * multiple of the period measured here, and pads pack sizes to it.
 */
#ifndef LMS_BLAS_PROBE_H
#define LMS_BLAS_PROBE_H

#include <stdint.h>

#include "lmscore.h"

/* A product C = A[m×k] · B[n×k]ᵀ of any row count m. */
typedef struct {
    int32_t k, n;
} blas_probe_shape;

/* Rows of a projection tile for a period P (matmul.h): the smallest
 * multiple of P that is at least 384. */
static inline int32_t blas_block_rows(int32_t period)
{
    return (384 + period - 1) / period * period;
}

/* Rows of an attention block (attention.h) for a period P: the smallest
 * multiple of P that is at least ATTN_BLOCK_ROWS_MIN. A block of the causal
 * prefix scores its rows against every key up to its last row, so it
 * computes about block/2 masked scores per row: small blocks waste less,
 * and attention runs no BLAS, so nothing else sets their size. */
#define ATTN_BLOCK_ROWS_MIN 128
static inline int32_t attn_block_rows(int32_t period)
{
    return (ATTN_BLOCK_ROWS_MIN + period - 1) / period * period;
}

/* The smallest period P (from 1 up to 256) such that, for every probed shape
 * and for calls made both from the top level (threaded BLAS) and from inside
 * an OpenMP parallel region (single-threaded BLAS), a row's result depends
 * only on its index modulo P, given calls whose row count is a multiple of P.
 * LMS_ERR_UNSUPPORTED if no period up to 256 holds. */
lms_status blas_row_period(const blas_probe_shape *shapes, int n_shapes, int32_t *period,
                           lms_error *err);

#endif
