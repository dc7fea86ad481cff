#!/bin/sh
# run.sh BUILD_DIR — the LM head benchmark (a part of `make bench`): the
# engine's LM head against an sgemm head on Qwen3-0.6B's output matrix, 1,
# 10 and 64 score rows, with the threads OpenMP gives it (all cores) and
# with one, in one table. Needs BUILD_DIR/bench/bench_lm_head and
# BUILD_DIR/models/qwen3-0.6b.gguf.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
model=$build/models/qwen3-0.6b.gguf
all=$("$build/bench/bench_lm_head" "$model")
one=$(OMP_NUM_THREADS=1 "$build/bench/bench_lm_head" "$model")
# The one-thread run's rows go under the first run's table.
printf '%s\n%s\n' "$all" "$(printf '%s\n' "$one" | grep '^| [0-9]')" |
    bench_block lm_head "$build" engine "${OMP_NUM_THREADS:-$(nproc)} and 1 threads" \
        "sh bench/lm_head/run.sh $(bench_path "$build")"
