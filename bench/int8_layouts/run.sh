#!/bin/sh
# run.sh BUILD_DIR — the int8 layouts part of `make bench`: bench_int8_layouts
# (its default shape), each ggml block type's layout against Q8_0's on every
# compute tier this CPU runs. INT8_LAYOUTS_ARGS (environment: N K ROWS REPS)
# is passed to it.
set -eu
build=${1:?usage: run.sh BUILD_DIR}
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
# shellcheck disable=SC2086 # INT8_LAYOUTS_ARGS is a list of words
table=$("$build/bench/bench_int8_layouts" ${INT8_LAYOUTS_ARGS:-})
printf '%s\n' "$table" | bench_block int8_layouts "$build" "each the CPU runs" "1 thread" \
    "$(bench_settings INT8_LAYOUTS_ARGS)sh bench/int8_layouts/run.sh $(bench_path "$build")"
