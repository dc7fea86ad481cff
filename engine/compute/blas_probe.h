/*
 * blas_probe.h — how far OpenBLAS's sgemm results are position-invariant.
 *
 * OpenBLAS computes a row of C = A·Bᵀ with arithmetic that depends on where
 * that row falls in the kernel's register tile (seen here: rows 6..11 of every
 * 12 round differently from rows 0..5 on the Haswell kernel). Exact item
 * isolation needs an item's rows to go through identical arithmetic whatever
 * the other items are, so the packer starts every segment at a row index that
 * is a multiple of the period measured here, and pads pack sizes to it.
 */
#ifndef LMS_BLAS_PROBE_H
#define LMS_BLAS_PROBE_H

#include <stdint.h>

#include "lmscore.h"

typedef struct {
    int32_t k, n;
    int b_rows_are_n; /* 1: C = A[m×k] · B[n×k]ᵀ (projections); 0: C = A · B[k×n] */
    int fixed_rows;   /* 1: every call has blas_block_rows(P) rows (attention);
                       * 0: calls of many row counts, all multiples of P */
} blas_probe_shape;

/* Rows of every attention product over shared keys for a period P: the
 * smallest multiple of P that is at least 384. OpenBLAS packs the whole key
 * (or value) panel again on every call, so the more rows share one call the
 * less that costs: 384 rather than 96 rows made a Q=2000, 128-item extend
 * 10% faster and a 2,000-token forward pass 3% (lmscore-local, Qwen3-0.6B
 * geometry); 256 to 512 measured the same. */
static inline int32_t blas_block_rows(int32_t period)
{
    return (384 + period - 1) / period * period;
}

/* The smallest period P (from 1 up to 256) such that, for every probed shape
 * and for calls made both from the top level (threaded BLAS) and from inside
 * an OpenMP parallel region (single-threaded BLAS), a row's result depends
 * only on its index modulo P, given calls whose row count is a multiple of P
 * (or, for fixed_rows shapes, exactly blas_block_rows(P)).
 * LMS_ERR_UNSUPPORTED if no period up to 256 holds. */
lms_status blas_row_period(const blas_probe_shape *shapes, int n_shapes, int32_t *period,
                           lms_error *err);

#endif
