#!/bin/sh
# run.sh BUILD_DIR — the load part of `make bench`: bench_load on the
# Qwen3-0.6B geometry as f16 and Q8_0 and on the Qwen3-8B geometry as Q8_0
# (8.7 GB, models-precision), each file in the page cache, all cores
# (docs/benchmarks.md, "Model load"). BENCH_LOAD_REPS (default 3) is the
# opens per file.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
rows=""
for stem in qwen3-0.6b qwen3-0.6b-q8_0 qwen3-8b-q8_0; do
    out=$("$build/bench/bench_load" "$build/models/$stem.gguf" --reps "${BENCH_LOAD_REPS:-3}")
    # the table's head, then one row per file
    head=$(printf '%s\n' "$out" | sed '$d')
    rows="$rows$(printf '%s\n' "$out" | tail -n 1)
"
done
printf '%s\n%s' "$head" "$rows" | bench_block load "$build" engine \
    "${OMP_NUM_THREADS:-$(nproc)} threads" \
    "$(bench_settings BENCH_LOAD_REPS)sh bench/load/run.sh $(bench_path "$build")"
