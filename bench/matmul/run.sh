#!/bin/sh
# run.sh BUILD_DIR — the matmul part of `make bench`: bench_matmul at the
# Qwen3-0.6B projection shapes on all cores (docs/benchmarks.md, "Projection
# kernels"). The table's first line names the OpenBLAS kernel measured, which
# OPENBLAS_CORETYPE in the environment decides. BENCH_MATMUL_REPS (default 5)
# is the repetitions per cell.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
table=$("$build/bench/bench_matmul" --reps "${BENCH_MATMUL_REPS:-5}")
printf '%s\n' "$table" | bench_block matmul "$build" engine "${OMP_NUM_THREADS:-$(nproc)} threads" \
    "$(bench_settings BENCH_MATMUL_REPS)sh bench/matmul/run.sh $(bench_path "$build")"
