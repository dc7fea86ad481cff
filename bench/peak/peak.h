/*
 * peak.h — one core's peak rate for each instruction the projection
 * kernels rest on, measured: a register-only loop of 12 independent
 * accumulators (no loads, no stores), chosen at run time by what the CPU
 * has, timed on the calling thread's CPU clock (other processes on a
 * shared machine take turns, not cycles). bench_peak prints them; the
 * projections' benchmarks divide their rate by the peak of the
 * instruction their tier's kernel uses.
 *
 * The rate counts a multiply-add as two operations: GFLOP/s for the
 * floating-point instructions, GOP/s for the int8 ones.
 */
#ifndef LMS_BENCH_PEAK_H
#define LMS_BENCH_PEAK_H

#include <stdbool.h>

#include "tier.h"
#include "weights.h"

typedef enum {
    PEAK_FMA_YMM,  /* vfmadd231ps ymm: 16 FLOP */
    PEAK_INT8_YMM, /* vpmaddubsw + vpmaddwd + vpaddd ymm, the avx2 int8 kernel's core: 64 OP */
    PEAK_INT8_SIGNED_YMM, /* vpsignb, then the three: the same 64 OP as the avx2 Q8_0 loop runs
                           * them, x signed by the weight for its |code| (full-range codes) */
    PEAK_FMA_ZMM,         /* vfmadd231ps zmm: 32 FLOP */
    PEAK_VNNI_ZMM,        /* vpdpbusd zmm: 128 OP */
    PEAK_BF16_ZMM,        /* vdpbf16ps zmm: 64 FLOP */
    PEAK_N,
    PEAK_NONE = -1, /* no probe: generic C, or a tile instruction */
} peak_kind;

/* The instruction (sequence) kind times, as an assembler writes it. */
const char *peak_instruction(peak_kind kind);

/* "GFLOP/s" or "GOP/s". */
const char *peak_unit(peak_kind kind);

/* Does this CPU (and its OS) run kind? */
bool peak_available(peak_kind kind);

/* One core's rate for kind in units of 1e9 per second: the best of a few
 * runs of about seconds each. kind must be available. */
double peak_rate(peak_kind kind, double seconds);

/* The instruction tier's kernels for matrices of format rest on, or
 * PEAK_NONE. The 16-bit kernels of the vector tiers widen the weights to
 * f32 and use the f32 FMA. */
peak_kind peak_of_tier(const compute_tier *tier, lms_weights_format format);

#endif
