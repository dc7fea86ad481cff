#!/bin/sh
# run.sh BUILD_DIR — the peak part of `make bench`: bench_peak, one core's
# peak rate of each instruction the projection kernels rest on
# (docs/benchmarks.md, "Instruction peaks"; bench_matmul's percentages
# divide by the same probes). BENCH_PEAK_SECONDS (default 0.5) is the
# length of each timed run.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
table=$("$build/bench/bench_peak" --seconds "${BENCH_PEAK_SECONDS:-0.5}")
printf '%s\n' "$table" | bench_block peak "$build" engine "1 thread" \
    "$(bench_settings BENCH_PEAK_SECONDS)sh bench/peak/run.sh $(bench_path "$build")"
