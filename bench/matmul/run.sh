#!/bin/sh
# run.sh BUILD_DIR — the matmul part of `make bench`: bench_matmul at the
# Qwen3-0.6B projection shapes on all cores (docs/benchmarks.md, "Projection
# kernels"). The table's first line names the OpenBLAS kernel measured, which
# OPENBLAS_CORETYPE in the environment decides. BENCH_MATMUL_REPS (default 5)
# is the repetitions per cell; BENCH_MATMUL_CLOCK=cpu times each by the
# process's CPU time per thread, with idle OpenMP threads sleeping
# (OMP_WAIT_POLICY=passive), which other processes on a shared machine do
# not inflate (default wall).
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
clock=${BENCH_MATMUL_CLOCK:-wall}
[ "$clock" = wall ] || export OMP_WAIT_POLICY=passive
table=$("$build/bench/bench_matmul" --reps "${BENCH_MATMUL_REPS:-5}" --clock "$clock")
printf '%s\n' "$table" | bench_block matmul "$build" engine "${OMP_NUM_THREADS:-$(nproc)} threads" \
    "$(bench_settings BENCH_MATMUL_REPS BENCH_MATMUL_CLOCK)sh bench/matmul/run.sh $(bench_path "$build")"
