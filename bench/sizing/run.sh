#!/bin/sh
# run.sh — the replica-sizing numbers docs/deployment.md sizes by: one lmscored
# configured as the Kubernetes manifests configure a pod (default workers,
# and threads sized from the CPUs it may use), driven by `lmscore bench` over
# loopback for each request shape of the table, at 1 and 2 calls in flight;
# the better throughput is the replica's. `make bench` calls it.
#
#   bench/sizing/run.sh BUILD_DIR
#
# SIZING_DURATION (environment, seconds, default 40) is each measurement's
# length. Prints a Markdown table and writes it as its block of
# docs/benchmarks.md (which docs/deployment.md refers to).
set -eu
build=$1
# shellcheck source=bench/machine.sh
. "$(dirname "$0")/../machine.sh"
duration=${SIZING_DURATION:-40}
cpus=$(nproc)
unset OMP_NUM_THREADS LMSCORE_THREADS LMSCORE_WORKERS
cli=$build/clients/c/lmscore
[ -x "$cli" ] || { echo "run.sh: $cli is missing (build the clients)" >&2; exit 1; }

# shellcheck source=bench/lmscored.sh
. "$(dirname "$0")/../lmscored.sh"

# One table row: MODEL_NAME Q N L. Runs 1 and 2 calls in flight and keeps the
# one with more items/s.
row() {
    runs=""
    for c in 1 2; do
        if ! out=$("$cli" bench --target "127.0.0.1:$port" --concurrency "$c" \
            --duration "$duration" --warmup 3 --query-tokens "$2" --items "$3" \
            --item-tokens "$4" --labels 2 --json); then
            echo "run.sh: $1: lmscore bench with $c in flight failed: $out" >&2
            continue
        fi
        runs="$runs$out
"
    done
    printf '%s' "$runs" | /usr/bin/python3 -c '
import json, math, sys
name, cpus = sys.argv[1], sys.argv[2]
runs = [json.loads(line) for line in sys.stdin if line.strip()]
for r in runs:
    if r["errors"]:
        sys.exit("run.sh: %s: errors %s" % (name, r["errors"]))
# A run that finished fewer than 3 calls says too little to count.
usable = [r for r in runs if r["requests"] >= 3]
for r in runs:
    if r not in usable:
        print("run.sh: %s: %d in flight finished %d calls in the time, not counted"
              % (name, r["concurrency"], r["requests"]), file=sys.stderr)
if not usable:
    sys.exit("run.sh: %s: no run finished 3 calls (raise SIZING_DURATION)" % name)
r = max(usable, key=lambda r: r["items_per_s"])
ips, lat = r["items_per_s"], r["latency_ms"]
need = lambda target: math.ceil(target / (ips * 0.7)) + 1
print("| %s | %s | %d | %d × %d | %.1f (%d in flight) | %.0f / %.0f | %d | %d |" % (
    name, cpus, r["query_tokens"], r["items"], r["item_tokens"], ips, r["concurrency"],
    lat["p50"], lat["p99"], need(1000), need(10000)))
' "$1" "$cpus"
}

table=$(
    echo "lmscored's default workers and threads, ${duration} s per measurement," \
        "load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo
    echo "| model | CPU per replica | Q | N × L | items/s per replica | p50 / p99 ms | replicas for 1,000 items/s | for 10,000 items/s |"
    echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
    lmscored_start "$build" "$build/models/qwen3-0.6b.gguf"
    row qwen3-0.6b 64 32 16
    row qwen3-0.6b 256 100 8
    lmscored_stop
    lmscored_start "$build" "$build/models/tiny-qwen3.gguf"
    row "tiny-qwen3 (demo)" 32 16 8
    lmscored_stop
)
printf '%s\n' "$table" | bench_block sizing "$build" engine "lmscored's default threads" \
    "$(bench_settings SIZING_DURATION)sh bench/sizing/run.sh $(bench_path "$build")"
