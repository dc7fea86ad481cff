#!/bin/sh
# run.sh — the service benchmark (a part of `make bench`; its tables are a
# block of docs/benchmarks.md): unary Score with 10 items over gRPC and over the HTTP API
# on loopback against the same request in-process and behind a bare TCP
# socket (the floor), p50/p99 and the differences (bench_service.c says how
# they are taken).
#   bench/service/run.sh BUILD_DIR [MODEL]
# MODEL defaults to BUILD_DIR/models/tiny-qwen3.gguf, where the engine time is
# small and the service overhead shows; BENCH_SERVICE_ARGS (environment) is
# passed to bench_service, e.g. "--iterations 2000", and LMSCORED_ARGS to the
# daemon (e.g. "--log-level debug" logs each call's engine time). Both sides run the
# engine single-threaded (OMP_NUM_THREADS=1, also for OpenBLAS's OpenMP
# flavour): the benchmark measures what the service adds, and a shared
# machine's oversubscribed OpenMP barriers would drown it.
set -eu
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
export OMP_NUM_THREADS=1
build=$1
model=${2:-$build/models/tiny-qwen3.gguf}
# shellcheck source=bench/lmscored.sh
. "$(dirname "$0")/../lmscored.sh"
# shellcheck disable=SC2086 # LMSCORED_ARGS is a list of words
lmscored_start "$build" "$model" --workers 1 --http-listen 127.0.0.1:0 ${LMSCORED_ARGS:-}
echo "model: $model"
# shellcheck disable=SC2086 # BENCH_SERVICE_ARGS is a list of words
tables=$("$build/bench/bench_service" --model "$model" --target "127.0.0.1:$port" \
    --http-port "$http_port" ${BENCH_SERVICE_ARGS:-})
lmscored_stop
command="sh bench/service/run.sh $(bench_path "$build")${2:+ $(bench_path "$2")}"
printf '%s\n' "$tables" | bench_block service "$build" engine "1 thread per engine" \
    "$(bench_settings BENCH_SERVICE_ARGS LMSCORED_ARGS)$command"
