#!/bin/sh
# run.sh BUILD_DIR — the LM head benchmark (`make bench` part 5): the
# engine's LM head against an sgemm head on Qwen3-0.6B's output matrix, 1,
# 10 and 64 score rows, with the threads OpenMP gives it (all cores) and
# with one. Needs BUILD_DIR/bench/bench_lm_head and BUILD_DIR/models/qwen3-0.6b.gguf.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
model=$build/models/qwen3-0.6b.gguf
"$build/bench/bench_lm_head" "$model"
echo
OMP_NUM_THREADS=1 "$build/bench/bench_lm_head" "$model"
