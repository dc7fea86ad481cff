"""serving.py — what serving a 0.6B checkpoint costs per precision
(docs/models.md#serve-a-real-model): for each (model, --precision) given,
lmscored's resident memory once it serves (VmRSS after the load and the
warm-up) and at its peak (VmHWM, the calls included), the load's time, and
for CALLS reranking-shaped Score calls one after another (no prefix cache,
so every call computes its query as a new query would): each call's time
and the daemon's CPU time (user + system) per call, which a busy machine
does not inflate as it does the wall time.

    python3 serving.py BUILD_DIR MODEL:PRECISION...

e.g. MODEL:auto MODEL:int8, MODEL a Hugging Face directory or a GGUF file.
The calls: CALLS (default 3) Score calls of random token ids (seeded), each
a query of BENCH_QUERY tokens (default 32) and BENCH_ITEMS documents
(default 8) of BENCH_ITEM_TOKENS (default 32), 2 labels. Prints a Markdown
table."""
import json
import os
import random
import re
import statistics
import subprocess
import sys
import time


def proc_status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no %s in /proc/%d/status" % (field, pid))


def serve(build, model, precision):
    """(process, port, the "model loaded" record's fields) once it serves."""
    proc = subprocess.Popen([os.path.join(build, "service", "lmscored"), "--model", model,
                             "--precision", precision, "--listen", "127.0.0.1:0",
                             "--prefix-cache-bytes", "0", "--log-format", "json"],
                            stderr=subprocess.PIPE, text=True)
    port, loaded = None, None
    for line in proc.stderr:
        rec = json.loads(line)
        if rec["msg"] == "listening":
            port = rec["port"]
        elif rec["msg"] == "model loaded and warmed up":
            loaded = rec
        elif rec["msg"] == "serving":
            return proc, port, loaded
    sys.exit("serving: lmscored did not serve %s at %s" % (model, precision))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def calls(build, proc, port):
    """(median seconds per call, CPU seconds per call)."""
    rng = random.Random(1)
    n = int(os.environ.get("CALLS", "3"))
    q, items, tokens = (int(os.environ.get(k, d)) for k, d in
                        (("BENCH_QUERY", "32"), ("BENCH_ITEMS", "8"), ("BENCH_ITEM_TOKENS", "32")))

    def ids(count):
        return ",".join(str(rng.randrange(1000, 100000)) for _ in range(count))
    times, cpu0 = [], cpu_seconds(proc.pid)
    for _ in range(n):
        argv = [os.path.join(build, "clients", "c", "lmscore"), "score", "--target",
                "127.0.0.1:%d" % port, "--timeout", "0", "--query-ids", ids(q),
                "--label-id", "9454", "--label-id", "2753"]
        for _ in range(items):
            argv += ["--item-ids", ids(tokens)]
        t0 = time.monotonic()
        out = subprocess.run(argv, capture_output=True, text=True)
        times.append(time.monotonic() - t0)
        if out.returncode != 0:
            sys.exit("serving: lmscore score failed: " + out.stderr)
    return statistics.median(times), (cpu_seconds(proc.pid) - cpu0) / n


def main():
    build, configs = sys.argv[1], sys.argv[2:]
    print("| model | --precision | ran as | weights as held | weight MB | load s | RSS serving MB "
          "| peak RSS MB | call s (median) | CPU s per call |")
    print("|---|---|---|---|---:|---:|---:|---:|---:|---:|")
    for config in configs:
        model, precision = config.rsplit(":", 1)
        proc, port, loaded = serve(build, model, precision)
        try:
            rss = proc_status(proc.pid, "VmRSS")
            call_s, cpu_s = calls(build, proc, port)
            peak = proc_status(proc.pid, "VmHWM")
        finally:
            proc.terminate()
            proc.communicate()
        print("| %s | %s | %s | %s | %.0f | %.1f | %.0f | %.0f | %.2f | %.2f |"
              % (re.sub(r"\.gguf$", "", os.path.basename(model.rstrip("/"))), precision,
                 loaded["precision"], loaded["weights"], loaded["weight_bytes"] / 1e6,
                 loaded["ms"] / 1e3, rss / 1e6, peak / 1e6, call_s, cpu_s))


if __name__ == "__main__":
    main()
