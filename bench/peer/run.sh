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
# bench`). Results in BUILD_DIR/bench-results/peer/; prints Markdown and
# writes it as its block of docs/benchmarks.md.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
tables=$(mktemp)
trap 'rm -f "$tables"' EXIT
# /usr/bin/python3: Debian's, with python3-numpy (ggml_ref.py), whatever python3
# comes first on PATH.
bench_tee "$tables" /usr/bin/python3 "$(dirname "$0")/peer.py" "$build" "$build/bench-results/peer"
settings=$(bench_settings PEER_PARTS PEER_THREADS PEER_ISA PEER_ROUNDS PEER_VARIANTS)
bench_block peer "$build" "as PEER_ISA says (the kernels column)" "${PEER_THREADS:-2} threads a side" \
    "${settings}sh bench/peer/run.sh $(bench_path "$build")" <"$tables" >/dev/null
