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

/* Rows per block of work for a period P — a projection tile's rows
 * (matmul.h) and an attention block's (attention.h): the smallest multiple
 * of P that is at least 384. */
static inline int32_t blas_block_rows(int32_t period)
{
    return (384 + period - 1) / period * period;
}

/* The smallest period P (from 1 up to 256) such that, for every probed shape
 * and for calls made both from the top level (threaded BLAS) and from inside
 * an OpenMP parallel region (single-threaded BLAS), a row's result depends
 * only on its index modulo P, given calls whose row count is a multiple of P.
 * LMS_ERR_UNSUPPORTED if no period up to 256 holds. */
lms_status blas_row_period(const blas_probe_shape *shapes, int n_shapes, int32_t *period,
                           lms_error *err);

#endif
