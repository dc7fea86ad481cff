#!/bin/sh
# run.sh BUILD_DIR — the phases part of `make bench`: bench_phases on
# Qwen3-0.6B (the peer workload's shape in one packed pass, at 1 and 2
# threads): each phase's share of the pass and its speed-up. PHASES_ARGS
# (environment) is passed to bench_phases, e.g. "--precision f32".
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
# shellcheck disable=SC2086 # PHASES_ARGS is a list of words
table=$("$build/bench/bench_phases" --model "$build/models/qwen3-0.6b.gguf" ${PHASES_ARGS:-})
# The table's first line names the tier the pass ran on.
printf '%s\n' "$table" | bench_block phases "$build" engine "1 and 2 threads" \
    "$(bench_settings PHASES_ARGS)sh bench/phases/run.sh $(bench_path "$build")"
