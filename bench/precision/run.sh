#!/bin/sh
# run.sh — the precision benchmark (docs/benchmarks.md#precision), part of
# `make bench`: accuracy of bf16 and int8 against f32 on the same weights,
# items/s per precision and tier, and memory and start-up,
# including the Qwen3-8B geometry as Q8_0 served by lmscored.
#
#   bench/precision/run.sh BUILD_DIR
#
# Needs the models-precision target (made by `make bench`). Writes its
# requests, precision_speed.csv and the plot precision_speed.png (speed.gp)
# to BUILD_DIR/bench-results/precision/, and prints Markdown, which it also
# writes as its block of docs/benchmarks.md (without the progress lines). PRECISION_PARTS
# (default "accuracy speed forward startup") picks parts, PRECISION_WORKLOADS the
# speed workloads (speed.py); a speed run of the default workloads copies
# the CSV and the plot to docs/bench/.
set -eu
build=$1
here=$(dirname "$0")
# shellcheck source=bench/machine.sh
. "$here/../machine.sh"
out=$build/bench-results/precision
mkdir -p "$out"
printed=$(mktemp)
trap 'rm -f "$printed"' EXIT
for part in ${PRECISION_PARTS:-accuracy speed forward startup}; do
    case $part in
    speed)
        # shellcheck disable=SC2086 # PRECISION_WORKLOADS is a list of words
        bench_tee "$printed" python3 "$here/speed.py" "$build" "$out" \
            ${PRECISION_WORKLOADS:+"$PRECISION_WORKLOADS"}
        gnuplot -e "csv='$out/precision_speed.csv'; png='$out/precision_speed.png'" \
            "$here/speed.gp"
        if [ -z "${PRECISION_WORKLOADS:-}" ]; then
            cp "$out/precision_speed.csv" "$out/precision_speed.png" "$here/../../docs/bench/"
        fi
        ;;
    *) bench_tee "$printed" python3 "$here/$part.py" "$build" "$out" ;;
    esac
done
settings=$(bench_settings PRECISION_PARTS PRECISION_QUERIES PRECISION_VARIANTS \
    PRECISION_WORKLOADS PRECISION_ROUNDS PRECISION_8B_SECONDS)
# The block holds the tables; the lines indented by two spaces are progress.
grep -v '^  ' "$printed" | bench_block precision "$build" engine "$(nproc) threads" \
    "${settings}sh bench/precision/run.sh $(bench_path "$build")" >/dev/null
