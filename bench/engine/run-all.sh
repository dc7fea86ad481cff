#!/bin/sh
# run-all.sh — what `make bench` runs (the `bench` target of bench/CMakeLists.txt):
#
#   run-all.sh SOURCE_DIR BUILD_DIR RESULTS_DIR
#
# 1. the engine benchmarks (bench_engine on models/qwen3-0.6b.gguf) and their
#    plot, copied to docs/bench/ (CSVs and PNG) when the whole set ran;
# 2. bench/tokenizer/run.sh BUILD_DIR, if it exists;
# 3. bench/service/run.sh BUILD_DIR, if it exists;
# 4. bench/sizing/run.sh BUILD_DIR (the replica sizing of docs/deployment.md);
# 5. bench/lm_head/run.sh BUILD_DIR (the LM head against an sgemm head);
# 6. bench/matmul/run.sh BUILD_DIR (the projection kernels against OpenBLAS
#    and oneDNN);
# 7. bench/metrics/run.sh BUILD_DIR (the Prometheus endpoint under load);
# 8. bench/precision/run.sh BUILD_DIR (bf16 and int8 against f32: accuracy,
#    speed, memory and start-up, the 8B geometry served as Q8_0);
# 9. bench/peer/run.sh BUILD_DIR (the engine against llama.cpp on the same
#    files: time ratio and accuracy).
# Each part's output is also kept in RESULTS_DIR/<part>.log. A failing part
# does not stop the others; the exit status says whether any failed.
# BENCH_ENGINE_ARGS (environment) is passed to bench_engine, e.g.
# "--workloads ab" for a quicker partial run (docs/bench/ is then left alone).
set -u
src=$1
build=$2
out=$3
mkdir -p "$out"
failed=""

# Runs "$@" with its output shown and kept in $out/$part.log; records failures.
run_part() {
    part=$1
    shift
    echo "== $part: $*"
    rc_file="$out/.$part.rc"
    { "$@" 2>&1; echo $? >"$rc_file"; } | tee "$out/$part.log"
    rc=$(cat "$rc_file")
    rm -f "$rc_file"
    if [ "$rc" != 0 ]; then
        echo "== $part failed (exit status $rc)"
        failed="$failed $part"
    fi
    return "$rc"
}

# shellcheck disable=SC2086 # BENCH_ENGINE_ARGS is a list of words
if run_part engine "$build/bench/bench_engine" --model "$build/models/qwen3-0.6b.gguf" --out "$out" \
    ${BENCH_ENGINE_ARGS:-}; then
    if run_part plot gnuplot -e "csv='$out/multi_item.csv'; png='$out/multi_item.png'" \
        "$src/bench/engine/multi_item.gp" && [ -z "${BENCH_ENGINE_ARGS:-}" ]; then
        mkdir -p "$src/docs/bench"
        cp "$out/sgemm.csv" "$out/forward.csv" "$out/multi_item.csv" "$out/multi_item.png" \
            "$src/docs/bench/"
        echo "== engine results copied to $src/docs/bench/ (tables: $out/engine.md)"
    fi
fi

for part in tokenizer service sizing lm_head matmul metrics precision peer; do
    if [ -f "$src/bench/$part/run.sh" ]; then
        run_part "$part" sh "$src/bench/$part/run.sh" "$build"
    else
        echo "== $part: bench/$part/run.sh does not exist yet, skipped"
    fi
done

if [ -n "$failed" ]; then
    echo "== bench: failed:$failed (logs in $out)"
    exit 1
fi
echo "== bench: done (logs in $out)"
