#!/bin/sh
# run.sh — the precision benchmark (docs/benchmarks.md#precision), part of
# `make bench`: accuracy of bf16 and int8 against f32 on the same weights,
# items/s per precision and OpenBLAS kernel, and memory and start-up,
# including the Qwen3-8B geometry as Q8_0 served by lmscored.
#
#   bench/precision/run.sh BUILD_DIR
#
# Needs the models-precision target (made by `make bench`). Writes its
# requests, precision_speed.csv and the plot precision_speed.png (speed.gp)
# to BUILD_DIR/bench-results/precision/, and prints Markdown. PRECISION_PARTS
# (default "accuracy speed forward startup") picks parts, PRECISION_WORKLOADS the
# speed workloads (speed.py); a speed run of the default workloads copies
# the CSV and the plot to docs/bench/.
set -eu
build=$1
here=$(dirname "$0")
out=$build/bench-results/precision
mkdir -p "$out"
echo "precision benchmark: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')," \
    "OPENBLAS_CORETYPE=${OPENBLAS_CORETYPE:-(unset)}, $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown), $(date -u '+%Y-%m-%d %H:%M UTC')"
for part in ${PRECISION_PARTS:-accuracy speed forward startup}; do
    case $part in
    speed)
        python3 "$here/speed.py" "$build" "$out" ${PRECISION_WORKLOADS:+"$PRECISION_WORKLOADS"}
        gnuplot -e "csv='$out/precision_speed.csv'; png='$out/precision_speed.png'" \
            "$here/speed.gp"
        if [ -z "${PRECISION_WORKLOADS:-}" ]; then
            cp "$out/precision_speed.csv" "$out/precision_speed.png" "$here/../../docs/bench/"
        fi
        ;;
    *) python3 "$here/$part.py" "$build" "$out" ;;
    esac
done
