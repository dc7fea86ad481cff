#!/bin/sh
# run-all.sh — what `make bench` runs (the `bench` target of bench/CMakeLists.txt):
#
#   run-all.sh SOURCE_DIR BUILD_DIR RESULTS_DIR
#   run-all.sh --parts        prints the parts, in the order they run
#
# Each part is bench/PART/run.sh BUILD_DIR, in this order:
#   engine        bench_engine on models/qwen3-0.6b.gguf and its plot (the
#                 CSVs and the PNG copied to docs/bench/ by a complete run);
#   load          lms_engine_open's time and rate on files in the page cache,
#                 the Qwen3-8B geometry as Q8_0 among them;
#   tokenizer     encode throughput against the reference JS tokenizer;
#   service       the service overhead over gRPC and HTTP;
#   sizing        the replica sizing docs/deployment.md refers to;
#   lm_head       the LM head against an sgemm head;
#   peak          one core's peak rate of each instruction the kernels use;
#   matmul        the projection kernels against OpenBLAS and oneDNN;
#   int8_layouts  the int8 kernels on each ggml block type's layout;
#   phases        a forward pass phase by phase at 1 and 2 threads;
#   metrics       the Prometheus endpoint under load (docs/bench/metrics.png);
#   precision     bf16 and int8 against f32 (the precision checkpoints);
#   peer          the engine against llama.cpp on the same GGUF files.
# A part writes its tables, headed by the machine and the command, to
# RESULTS_DIR/PART.md (bench/machine.sh); when the part succeeds,
# bench/update-doc.py puts that file into PART's block of
# docs/benchmarks.md. A part that fails or is skipped leaves its block as it
# was; the others still run, and the exit status says whether any failed.
# Each part's output is also kept in RESULTS_DIR/PART.log.
# BENCH_PARTS (environment) runs only the parts it names, e.g.
# BENCH_PARTS="matmul lm_head"; each part's run.sh names its own variables.
set -u
parts="engine load tokenizer service sizing lm_head peak matmul int8_layouts phases metrics precision peer"
if [ "${1:-}" = --parts ]; then
    echo "$parts"
    exit 0
fi
src=${1:?usage: run-all.sh SOURCE_DIR BUILD_DIR RESULTS_DIR | run-all.sh --parts}
build=${2:?usage: run-all.sh SOURCE_DIR BUILD_DIR RESULTS_DIR}
out=${3:?usage: run-all.sh SOURCE_DIR BUILD_DIR RESULTS_DIR}
mkdir -p "$out"
export BENCH_RESULTS="$out"
failed=""

for part in ${BENCH_PARTS:-$parts}; do
    case " $parts " in
    *" $part "*) ;;
    *)
        echo "== $part: not a part of make bench (the parts: $parts)"
        failed="$failed $part"
        continue
        ;;
    esac
    echo "== $part: sh bench/$part/run.sh $build"
    rm -f "$out/$part.md"
    rc_file="$out/.$part.rc"
    { sh "$src/bench/$part/run.sh" "$build" 2>&1; echo $? >"$rc_file"; } | tee "$out/$part.log"
    rc=$(cat "$rc_file")
    rm -f "$rc_file"
    if [ "$rc" != 0 ]; then
        echo "== $part failed (exit status $rc); its block of docs/benchmarks.md is left as it was"
        failed="$failed $part"
    elif ! /usr/bin/python3 "$src/bench/update-doc.py" "$src/docs/benchmarks.md" "$part" \
        "$out/$part.md"; then
        echo "== $part: its block of docs/benchmarks.md could not be updated"
        failed="$failed $part"
    else
        echo "== $part: block updated in docs/benchmarks.md"
    fi
done

if [ -n "$failed" ]; then
    echo "== bench: failed:$failed (logs in $out)"
    exit 1
fi
echo "== bench: done (logs in $out)"
