#!/bin/sh
# run.sh — what the Prometheus endpoint costs, and the dashboard's series
# from a real scrape. `make bench` calls it.
#
#   bench/metrics/run.sh BUILD_DIR
#
# Cost: `lmscore bench` (its default shape) with 32 clients against lmscored
# on the demo model, in rounds that alternate a daemon without
# --metrics-listen and one with it, scraped every second (Prometheus scrapes
# every 15 s to a minute); the items/s of the two are compared by their
# medians. Then the CPU the daemon spends per scrape (/proc/PID/stat over
# 2,000 scrapes), which bounds the cost whatever the machine's noise.
# Series: one daemon (queue depth 32) scraped every second while 8
# (prefill_extend), 32 and 64 clients load it in turn; scrape.py computes the
# dashboard's series from the scrapes and metrics.gp plots them to
# docs/bench/metrics.png.
#
# METRICS_BENCH_SECONDS (environment, default 15) is each round's length,
# METRICS_BENCH_ROUNDS (default 4) the number of rounds. The rounds' table and
# the scrape cost are the part's block of docs/benchmarks.md.
set -eu
build=$1
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
seconds=${METRICS_BENCH_SECONDS:-15}
rounds=${METRICS_BENCH_ROUNDS:-4}
out=$build/bench-results/metrics
model=$build/models/tiny-qwen3.gguf
cli=$build/clients/c/lmscore
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.jsonl
unset OMP_NUM_THREADS LMSCORE_THREADS LMSCORE_WORKERS

# shellcheck source=bench/lmscored.sh
. "$here/../lmscored.sh"
# shellcheck source=bench/machine.sh
. "$here/../machine.sh"

scraper=""
stop_scraper() {
    [ -n "$scraper" ] || return 0
    kill "$scraper" 2>/dev/null || true
    wait "$scraper" 2>/dev/null || true
    scraper=""
}

# bench_run FILE CONCURRENCY SECONDS: one lmscore bench run, its JSON to FILE
bench_run() {
    "$cli" bench --target "127.0.0.1:$port" --concurrency "$2" --duration "$3" --warmup 2 \
        --json >"$1"
}

# bench_off R / bench_on R: round R without the endpoint, and with it polled
# every second (the answers dropped: parsing them is Prometheus' work, on
# another machine).
bench_off() {
    lmscored_start "$build" "$model"
    bench_run "$out/off-$1.json" 32 "$seconds"
    lmscored_stop
}
bench_on() {
    lmscored_start "$build" "$model" --metrics-listen 127.0.0.1:0
    /usr/bin/python3 "$here/scrape.py" poll "http://127.0.0.1:$metrics_port/metrics" \
        $((seconds + 10)) 1 &
    scraper=$!
    bench_run "$out/on-$1.json" 32 "$seconds"
    stop_scraper
    lmscored_stop
}
# Rounds alternate the order (off-on, on-off, ...) so that a drift in the
# machine's load does not favour one side.
for r in $(seq 1 "$rounds"); do
    if [ $((r % 2)) = 1 ]; then bench_off "$r"; bench_on "$r"; else bench_on "$r"; bench_off "$r"; fi
done

/usr/bin/python3 - "$out" "$rounds" "$seconds" <<'PY'
import json, statistics, sys
out, rounds, seconds = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda kind: [json.load(open(f"{out}/{kind}-{r}.json")) for r in range(1, rounds + 1)]
off, on = load("off"), load("on")
for runs in (off, on):
    for r in runs:
        if r["errors"]:
            sys.exit(f"run.sh: errors during the benchmark: {r['errors']}")
a = statistics.median(r["items_per_s"] for r in off)
b = statistics.median(r["items_per_s"] for r in on)
print("rounds (items/s, 32 clients):")
for r, (x, y) in enumerate(zip(off, on), 1):
    print(f"  {r}: without metrics {x['items_per_s']:.0f}, with metrics scraped every 1 s "
          f"{y['items_per_s']:.0f}")
spread = max(abs(x["items_per_s"] - y["items_per_s"]) / x["items_per_s"] for x, y in zip(off, on))
print(f"metrics endpoint cost: {100 * (a - b) / a:+.2f}% of Score throughput "
      f"(medians {a:.0f} vs {b:.0f} items/s; with/without = {b / a:.4f}; the largest "
      f"difference within a round, {100 * spread:.1f}%, is the run-to-run noise here)")
with open(f"{out}/cost.md", "w") as md:
    md.write(f"Score throughput with 32 `lmscore bench` clients on tiny-qwen3, {rounds} rounds "
             f"of {seconds} s alternating the two daemons:\n\n"
             "| round | items/s without the endpoint | items/s scraped every 1 s |\n"
             "| ---: | ---: | ---: |\n")
    for r, (x, y) in enumerate(zip(off, on), 1):
        md.write(f"| {r} | {x['items_per_s']:.0f} | {y['items_per_s']:.0f} |\n")
    md.write(f"| median | {a:.0f} | {b:.0f} |\n\n"
             f"With/without: {b / a:.4f}; the largest difference within a round, "
             f"{100 * spread:.1f}%, is the run-to-run noise.\n")
PY

# What a scrape costs the daemon in CPU (after some load, so that every
# series is there).
lmscored_start "$build" "$model" --metrics-listen 127.0.0.1:0
"$cli" bench --target "127.0.0.1:$port" --concurrency 8 --duration 2 --warmup 0 >/dev/null
cost=$(/usr/bin/python3 "$here/scrape.py" cost "http://127.0.0.1:$metrics_port/metrics" "$pid" 2000)
lmscored_stop
echo "$cost: at one scrape a second, that share of one core is the endpoint's whole cost"
{
    cat "$out/cost.md"
    echo
    echo "Scrape cost (2,000 scrapes after load, the daemon's CPU time from /proc/PID/stat): $cost."
} >"$out/block.md"

lmscored_start "$build" "$model" --metrics-listen 127.0.0.1:0 --queue-depth 32
/usr/bin/python3 "$here/scrape.py" record "http://127.0.0.1:$metrics_port/metrics" \
    "$out/series.jsonl" 40 1 &
scraper=$!
sleep 2
# 8 clients on prefill_extend (the bench's one query: prefix-cache hits), then
# 32 and 64 on the engine's choice; 64 overflow the queue (queue_full).
for phase in 8:prefill_extend 32:auto 64:auto; do
    "$cli" bench --target "127.0.0.1:$port" --concurrency "${phase%:*}" --duration 10 \
        --warmup 0 --algorithm "${phase#*:}" --json >"$out/series-${phase%:*}.json" || true
done
sleep 3
stop_scraper
lmscored_stop
/usr/bin/python3 "$here/scrape.py" series "$out/series.jsonl" "$out/metrics.csv"
gnuplot -e "csv='$out/metrics.csv'; png='$out/metrics.png'" "$here/metrics.gp"
mkdir -p "$src/docs/bench"
cp "$out/metrics.csv" "$out/metrics.png" "$src/docs/bench/"
echo "dashboard series from the scrapes: $src/docs/bench/metrics.png (data: metrics.csv)"
settings=$(bench_settings METRICS_BENCH_SECONDS METRICS_BENCH_ROUNDS)
bench_block metrics "$build" engine "lmscored's default threads" \
    "${settings}sh bench/metrics/run.sh $(bench_path "$build")" <"$out/block.md" >/dev/null
