#!/bin/sh
# smoke-test.sh — ctest bench.engine_smoke: bench_engine end to end on tiny
# shapes and a tiny model, then checks that every result file has the rows
# it must have and that the plot script renders the CSV.
#
#   smoke-test.sh BENCH_ENGINE MODEL OUT_DIR SOURCE_DIR
set -eu
bench=$1
model=$2
out=$3
src=$4
rm -rf "$out"
mkdir -p "$out"
"$bench" --smoke --model "$model" --out "$out"

lines() { wc -l <"$1" | tr -d ' '; }
expect_lines() {
    if [ "$(lines "$1")" != "$2" ]; then
        echo "smoke-test: $1 has $(lines "$1") lines, expected $2" >&2
        exit 1
    fi
}
# header + 4 projection shapes × 5 rounds (start, before each workload, end)
expect_lines "$out/sgemm.csv" 21
expect_lines "$out/forward.csv" 2 # header + 1
# header + 3 workloads × 5 cold algorithms + 2 warm runs
expect_lines "$out/multi_item.csv" 18
# The smoke preset's dense-mask limit refuses at least one packed_dense run,
# and every other cold run completes.
grep -q ',packed_dense,refused,' "$out/multi_item.csv"
if grep -E ',(failed|stopped),' "$out/multi_item.csv"; then
    echo "smoke-test: a run failed or was stopped" >&2
    exit 1
fi
grep -q '^### (c) Q=40, N=3, L=40' "$out/engine.md"

if command -v gnuplot >/dev/null; then
    gnuplot -e "csv='$out/multi_item.csv'; png='$out/multi_item.png'" \
        "$src/bench/engine/multi_item.gp"
    test -s "$out/multi_item.png"
fi
echo "smoke-test: ok"
