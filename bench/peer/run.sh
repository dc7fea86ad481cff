#!/bin/sh
# run.sh — the engine against llama.cpp (docs/benchmarks.md#llamacpp), part
# of `make bench`: the peer workload's time ratio per GGUF file and the
# accuracy of both against the engine's f32, with llama.cpp's own prebuilt
# libraries (bench/peer/peer.py says what runs and which variables pick
# parts).
#
#   bench/peer/run.sh BUILD_DIR
#
# Needs bench_peer and the targets ggml-ref and models-peer (made by `make
# bench`). Results in BUILD_DIR/bench-results/peer/; prints Markdown.
set -eu
# /usr/bin/python3: Debian's, with python3-numpy (ggml_ref.py), whatever python3
# comes first on PATH.
exec /usr/bin/python3 "$(dirname "$0")/peer.py" "$1" "$1/bench-results/peer"
