/*
 * sgemm_peak.h — what OpenBLAS sgemm sustains on this machine at the shapes
 * the model's projections use (the yardstick of every useful-GFLOP/s ratio).
 */
#ifndef BENCH_SGEMM_PEAK_H
#define BENCH_SGEMM_PEAK_H

#include <stdint.h>

typedef struct {
    int32_t m, n, k; /* C[m×n] = A[m×k] · B[n×k]ᵀ, row-major, as the engine calls it */
    double best_gflops;
    double best_seconds;
    double best_cpu_gflops; /* FLOPs per second of process CPU time, best rep */
} sgemm_shape_result;

/* Times each shape `reps` times after one warm-up call and keeps the best
 * (by wall time, and separately by CPU time).
 * Returns 0, or -1 when the matrices cannot be allocated. */
int sgemm_measure(sgemm_shape_result *shapes, int n_shapes, int reps);

#endif
