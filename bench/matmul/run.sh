#!/bin/sh
# run.sh BUILD_DIR — the matmul part of `make bench`: bench_matmul at the
# Qwen3-0.6B projection shapes on all cores (docs/benchmarks.md, "Projection
# kernels"). The table's first line names the OpenBLAS kernel measured.
set -eu
exec "$1/bench/bench_matmul" --reps "${BENCH_MATMUL_REPS:-5}"
