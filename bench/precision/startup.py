"""startup.py — the precision benchmark's memory and start-up part
(docs/benchmarks.md#precision): per stored precision of the Qwen3-0.6B
geometry, the weights' resident bytes per parameter, the load time and the
peak RSS of a process that loads the model and scores one token
(lmscore-local); lmscored's time from start to SERVING and its peak RSS; and
the Qwen3-8B geometry as Q8_0 GGUF served by lmscored, with one workload-(a)
Score call (lmscore bench).

    python3 startup.py BUILD_DIR OUT_DIR

Needs models-precision (tools/CMakeLists.txt). Target misses are reported,
not an exit status."""
import json
import os
import re
import subprocess
import sys
import time

import local

GIB = 1 << 30
BYTES_PER_PARAM_GATE = {"bf16": 2.05, "int8": 1.15}
# Peak RSS while loading a 16-bit or Q8_0 checkpoint in its own precision:
# at most the weights as held + 10% (no f32 detour, no second copy).
LOAD_RSS_GATE = 1.10
# (file stem, --precision, what it measures, whether LOAD_RSS_GATE applies)
LOCAL_RUNS = (("qwen3-0.6b-f32", "f32", "f32 checkpoint, f32", False),
              ("qwen3-0.6b", "auto", "f16 checkpoint, auto (16-bit)", True),
              ("qwen3-0.6b-bf16", "bf16", "bf16 checkpoint, bf16", True),
              ("qwen3-0.6b-q8_0", "int8", "Q8_0 checkpoint, int8", True),
              ("qwen3-0.6b-f32", "bf16", "f32 checkpoint, bf16 (rounded at load)", False),
              ("qwen3-0.6b-f32", "int8", "f32 checkpoint, int8 (quantised at load)", False))
# (file stem, stored type, start-up target in seconds or None)
DAEMON_MODELS = (("qwen3-0.6b", "f16", 2.0), ("qwen3-0.6b-bf16", "bf16", None),
                 ("qwen3-0.6b-q8_0", "Q8_0", None))
WORKLOAD_A = (300, 10, 20)


def proc_status(pid, field):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    return -1


class Daemon:
    """lmscored on a free loopback port, from start until SERVING."""

    def __init__(self, build, model):
        t0 = time.monotonic()
        self.proc = subprocess.Popen([os.path.join(build, "service", "lmscored"), "--model", model,
                                      "--listen", "127.0.0.1:0"], stderr=subprocess.PIPE,
                                     text=True)
        self.port = None
        for line in self.proc.stderr:
            m = re.search(r'msg="listening".* port=(\d+)', line)
            if m:
                self.port = m.group(1)
            if 'msg="serving"' in line:
                break
        self.startup_seconds = time.monotonic() - t0
        if self.proc.poll() is not None or self.port is None:
            sys.exit("startup: lmscored did not serve %s" % model)

    def peak_rss(self):
        return proc_status(self.proc.pid, "VmHWM")

    def stop(self):
        self.proc.terminate()
        self.proc.communicate()


def local_table(build, out):
    request = local.write_request(os.path.join(out, "startup.json"), 1, 1, 1, 2, seed=1)
    print("\n### Memory and load: Qwen3-0.6B geometry (lmscore-local)\n")
    print("| checkpoint, precision | file MB | ran as | weights as held | weight MB | bytes / "
          "parameter | gate | load s | peak RSS MB | peak RSS / weights | gate |")
    print("|---|---:|---|---|---:|---:|---|---:|---:|---:|---|")
    missed = 0
    for stem, precision, what, rss_gated in LOCAL_RUNS:
        path = os.path.join(build, "models", stem + ".gguf")
        res = local.score(build, path, request, precision)
        bpp = res["weight_bytes"] / res["parameters"]
        bound = BYTES_PER_PARAM_GATE.get(res["precision"])
        gate = "—" if bound is None else ("≤ %.2f: %s" % (bound, "met" if bpp <= bound
                                                           else "**MISSED**"))
        rss_ratio = res["peak_rss_bytes"] / res["weight_bytes"]
        rss_gate = "—" if not rss_gated else ("≤ %.2f: %s" % (
            LOAD_RSS_GATE, "met" if rss_ratio <= LOAD_RSS_GATE else "**MISSED**"))
        missed += gate.endswith("**") + rss_gate.endswith("**")
        print("| %s | %.0f | %s | %s | %.0f | %.3f | %s | %.2f | %.0f | %.2f | %s |"
              % (what, os.path.getsize(path) / 1e6, res["precision"], res["weights"],
                 res["weight_bytes"] / 1e6, bpp, gate, res["load_seconds"],
                 res["peak_rss_bytes"] / 1e6, rss_ratio, rss_gate))
    return missed


def daemon_table(build):
    print("\n### lmscored start-up (start to SERVING, model load and warm-up)\n")
    print("| checkpoint (precision auto) | start-up s | target | peak RSS MB |")
    print("|---|---:|---|---:|")
    missed = 0
    for stem, what, bound in DAEMON_MODELS:
        d = Daemon(build, os.path.join(build, "models", stem + ".gguf"))
        rss = d.peak_rss()
        d.stop()
        target = "—"
        if bound is not None:
            ok = d.startup_seconds <= bound
            missed += not ok
            target = "≤ %g s: %s" % (bound, "met" if ok else "**MISSED**")
        print("| Qwen3-0.6B geometry, %s | %.2f | %s | %.0f |"
              % (what, d.startup_seconds, target, rss / 1e6))
    return missed


def big_model(build):
    path = os.path.join(build, "models", "qwen3-8b-q8_0.gguf")
    print("\n### Qwen3-8B geometry, Q8_0 GGUF (%.1f GB), served by lmscored\n"
          % (os.path.getsize(path) / 1e9))
    d = Daemon(build, path)
    load_rss = d.peak_rss()
    info = subprocess.run([os.path.join(build, "clients", "c", "lmscore"), "info", "--target",
                           "127.0.0.1:" + d.port, "--timeout", "0", "--json"],
                          capture_output=True, text=True)
    q, n, l = WORKLOAD_A
    bench = subprocess.run([os.path.join(build, "clients", "c", "lmscore"), "bench", "--target",
                            "127.0.0.1:" + d.port, "--timeout", "0", "--concurrency", "1",
                            "--warmup", "0",
                            "--duration", os.environ.get("PRECISION_8B_SECONDS", "90"),
                            "--query-tokens", str(q), "--items", str(n), "--item-tokens", str(l),
                            "--labels", "2", "--json"], capture_output=True, text=True)
    peak = d.peak_rss()
    d.stop()
    if bench.returncode != 0:
        sys.exit("startup: lmscore bench on the 8B model failed: " + bench.stderr)
    b = json.loads(bench.stdout)
    if not b["requests"]:
        sys.exit("startup: no Score call on the 8B model finished in PRECISION_8B_SECONDS")
    model_info = json.loads(info.stdout) if info.returncode == 0 else {}
    call = b["latency_ms"]["p50"] / 1e3
    print("| start-up s | peak RSS after start-up GiB | workload (a) Score calls | call s (p50) "
          "| items/s (items / call s) | peak RSS after the calls GiB | ≤ 12 GiB |")
    print("|---:|---:|---:|---:|---:|---:|---|")
    print("| %.1f | %.2f | %d | %.1f | %.2f | %.2f | %s |"
          % (d.startup_seconds, load_rss / GIB, b["requests"], call, n / call, peak / GIB,
             "met" if peak <= 12 * GIB else "**MISSED**"))
    if model_info:
        print("\nGetModelInfo: %s" % json.dumps(model_info, sort_keys=True))
    return peak > 12 * GIB


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    missed = local_table(build, out)
    missed += daemon_table(build)
    missed += big_model(build)
    print("\nmemory and start-up: %d target%s missed" % (missed, "" if missed == 1 else "s"))


if __name__ == "__main__":
    main()
