#!/usr/bin/python3
"""scrape.py — the metrics benchmark's scraper and its series.

  scrape.py record URL OUT.jsonl SECONDS PERIOD
      scrapes URL every PERIOD seconds for SECONDS; one JSON line per scrape:
      {"t": seconds since the start, "samples": [[name, {labels}, value], ...]}
  scrape.py poll URL SECONDS PERIOD
      fetches URL every PERIOD seconds for SECONDS and drops the answer (what
      the daemon pays for a scrape, without this process parsing it)
  scrape.py cost URL PID N
      N scrapes back to back; prints the CPU time the daemon (PID) spent per
      scrape, from /proc/PID/stat
  scrape.py series IN.jsonl OUT.csv
      the dashboard's series (k8s/grafana/lmscore.json) between consecutive
      scrapes, computed as Prometheus computes them from the same counters:
      items/s, items per call, p50/p99 of queue wait, engine time and whole
      Score calls (histogram_quantile over the interval's bucket increases),
      errors/s, prefix-cache hit ratio, calls in flight.
"""
import http.client
import json
import math
import os
import sys
import time
import urllib.request

from prometheus_client.parser import text_string_to_metric_families

SCORING = ("Score", "ScoreStream", "ScoreItems")


def record(url, out, seconds, period):
    start = time.monotonic()
    with open(out, "w") as f:
        while time.monotonic() - start < seconds:
            t = time.monotonic() - start
            with urllib.request.urlopen(url, timeout=10) as resp:
                body = resp.read().decode()
            samples = [[s.name, s.labels, s.value]
                       for fam in text_string_to_metric_families(body) for s in fam.samples]
            f.write(json.dumps({"t": round(t, 3), "samples": samples}) + "\n")
            f.flush()
            time.sleep(max(0.0, period - (time.monotonic() - start - t)))


def poll(url, seconds, period):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        t = time.monotonic()
        with urllib.request.urlopen(url, timeout=10) as resp:
            resp.read()
        time.sleep(max(0.0, period - (time.monotonic() - t)))


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cost(url, pid, n):
    host, port = url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=10)
    before = cpu_seconds(pid)
    for _ in range(n):
        conn.request("GET", "/metrics")
        conn.getresponse().read()
    spent = cpu_seconds(pid) - before
    print(f"daemon CPU per scrape: {spent / n * 1e6:.0f} us ({n} scrapes, {spent:.2f} s)")


def matches(labels, want):
    """labels include want (a tuple value: any of them)."""
    return all(labels.get(a) in (b if isinstance(b, tuple) else (b,)) for a, b in want.items())


def total(samples, name, **want):
    """Sum of the samples of name whose labels match want."""
    return sum(v for n, labels, v in samples if n == name and matches(labels, want))


def quantile(q, before, after, family, **want):
    """histogram_quantile(q, sum by (le) (increase(family_bucket{want}))) over the interval."""
    buckets = {}
    for sign, samples in ((-1, before), (1, after)):
        for n, labels, v in samples:
            if n == family + "_bucket" and matches(labels, want):
                le = float(labels["le"])  # "+Inf" parses as inf
                buckets[le] = buckets.get(le, 0.0) + sign * v
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return math.nan
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for le in bounds:
        if buckets[le] >= rank:
            if math.isinf(le):
                return lower
            return lower + (le - lower) * (rank - below) / max(buckets[le] - below, 1e-12)
        lower, below = le, buckets[le]
    return lower


def series(path, out):
    scrapes = [json.loads(line) for line in open(path)]
    rows = []
    for a, b in zip(scrapes, scrapes[1:]):
        dt = b["t"] - a["t"]
        sa, sb = a["samples"], b["samples"]
        d = lambda name, **w: total(sb, name, **w) - total(sa, name, **w)  # noqa: E731
        calls = d("lmscore_requests_total", method=SCORING, code="OK")
        hits, misses = d("lmscore_prefix_cache_hits_total"), d("lmscore_prefix_cache_misses_total")
        ms = lambda q, fam, methods: 1e3 * quantile(q, sa, sb, fam, method=methods)  # noqa: E731
        rows.append([
            b["t"], d("lmscore_items_scored_total") / dt,
            d("lmscore_items_scored_total") / calls if calls else math.nan,
            ms(0.5, "lmscore_queue_wait_seconds", SCORING),
            ms(0.99, "lmscore_queue_wait_seconds", SCORING),
            ms(0.5, "lmscore_engine_duration_seconds", SCORING),
            ms(0.99, "lmscore_engine_duration_seconds", SCORING),
            ms(0.5, "lmscore_request_duration_seconds", ("Score", "ScoreStream")),
            ms(0.99, "lmscore_request_duration_seconds", ("Score", "ScoreStream")),
            d("lmscore_errors_total") / dt,
            hits / (hits + misses) if hits + misses else math.nan,
            total(sb, "lmscore_in_flight_calls"),
        ])
    with open(out, "w") as f:
        f.write("t_s,items_per_s,items_per_call,queue_p50_ms,queue_p99_ms,engine_p50_ms,"
                "engine_p99_ms,call_p50_ms,call_p99_ms,errors_per_s,cache_hit_ratio,in_flight\n")
        for r in rows:
            f.write(",".join("nan" if isinstance(x, float) and math.isnan(x) else f"{x:.6g}"
                             for x in r) + "\n")


if __name__ == "__main__":
    if sys.argv[1:2] == ["record"] and len(sys.argv) == 6:
        record(sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5]))
    elif sys.argv[1:2] == ["poll"] and len(sys.argv) == 5:
        poll(sys.argv[2], float(sys.argv[3]), float(sys.argv[4]))
    elif sys.argv[1:2] == ["cost"] and len(sys.argv) == 5:
        cost(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
    elif sys.argv[1:2] == ["series"] and len(sys.argv) == 4:
        series(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
