#!/bin/sh
# run.sh BUILD_DIR — the engine part of `make bench`: bench_engine on
# BUILD_DIR/models/qwen3-0.6b.gguf (sgemm peak, the 2,000-token forward pass,
# the multi-item workloads (a)–(d)) and the workloads' plot, in
# RESULTS/engine/ (CSVs, engine.md, multi_item.png); engine.md under the
# machine's head line is the part's block. BENCH_ENGINE_ARGS (environment) is
# passed to bench_engine, e.g. "--workloads ab" for a quicker partial run; a
# complete run (no BENCH_ENGINE_ARGS) also copies the CSVs and the plot to
# docs/bench/, which the doc shows beside the block.
set -eu
build=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
dir=$(dirname "$(bench_md engine "$build")")/engine
mkdir -p "$dir"
# The tables name the model as given: from the source tree, a path that reads
# the same on every machine.
cd "$bench_src"
# shellcheck disable=SC2086 # BENCH_ENGINE_ARGS is a list of words
"$build/bench/bench_engine" --model "$(bench_path "$build/models/qwen3-0.6b.gguf")" \
    --out "$dir" ${BENCH_ENGINE_ARGS:-}
gnuplot -e "csv='$dir/multi_item.csv'; png='$dir/multi_item.png'" \
    "$bench_src/bench/engine/multi_item.gp"
bench_block engine "$build" engine "${OMP_NUM_THREADS:-$(nproc)} threads" \
    "$(bench_settings BENCH_ENGINE_ARGS)sh bench/engine/run.sh $(bench_path "$build")" \
    <"$dir/engine.md" >/dev/null
if [ -z "${BENCH_ENGINE_ARGS:-}" ]; then
    mkdir -p "$bench_src/docs/bench"
    cp "$dir/sgemm.csv" "$dir/forward.csv" "$dir/multi_item.csv" "$dir/multi_item.png" \
        "$bench_src/docs/bench/"
    echo "== engine results copied to $bench_src/docs/bench/"
fi
