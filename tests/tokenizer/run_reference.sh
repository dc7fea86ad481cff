#!/bin/sh
# run_reference.sh PREFIX CORPUS_DIR — installs the pinned reference
# tokenizers into PREFIX when needed, then writes their ids for the corpus to
# PREFIX/out/ (see reference.js).
set -eu
PREFIX=${1:?usage: run_reference.sh PREFIX CORPUS_DIR}
CORPUS_DIR=${2:?usage: run_reference.sh PREFIX CORPUS_DIR}
HERE=$(cd "$(dirname "$0")" && pwd)
sh "$HERE/install_reference.sh" "$PREFIX"
node "$HERE/reference.js" encode "$PREFIX" "$CORPUS_DIR/corpus.txt" \
    "$CORPUS_DIR/invalid_utf8.txt" "$PREFIX/out"
