"""llama.py — bench_peer from Python: the engine and llama.cpp on one GGUF
file and one token-id request (bench_peer.c), for the llama.cpp benchmark
(peer.py) and the precision benchmark's llama.cpp rows (accuracy.py).

llama.cpp's libraries are the pinned npm package that the build tree's
target ggml-ref installs (tests/ggml/npm); lib_dir() is where they land.
llama.cpp scores at most MAX_ITEMS items per decode (a sequence per item
and one for the query, LLAMA_MAX_SEQ 256), so logprobs() splits a longer
request into requests of that many items after the same query.
"""
import json
import os
import subprocess
import sys

LIB_SUBDIR = os.path.join("ggml-ref", "node_modules", "@node-llama-cpp", "linux-x64", "bins",
                          "linux-x64")
MAX_ITEMS = 255


def lib_dir(build):
    return os.path.join(os.path.abspath(build), LIB_SUBDIR)


def bench_peer(build, model, request, threads, isa, rounds, warmup, out_json, extra=()):
    """One bench_peer process; its JSON, also written to out_json. Exits
    on any failure."""
    cmd = [os.path.join(build, "bench", "bench_peer"), "--model", model, "--request", request,
           "--llama-lib", lib_dir(build), "--threads", str(threads), "--isa", isa,
           "--rounds", str(rounds), "--warmup", str(warmup), *extra]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        sys.exit("peer: %s failed (status %d): %s" % (" ".join(cmd), proc.returncode,
                                                      proc.stderr[-1000:]))
    with open(out_json, "w") as f:
        f.write(proc.stdout)
    return json.loads(proc.stdout)


def logprobs(build, model, request, threads, out_prefix):
    """llama.cpp's log-probs (its defaults: flash attention, f16 K and V)
    for every item of the request at `request`, MAX_ITEMS items per
    bench_peer run (one round, no warm-up); each run's request and JSON kept
    as out_prefix-N.json and out_prefix-N.out.json. Returns
    {"logprobs": [[...] per item], "features": llama.cpp's CPU backend}."""
    with open(request) as f:
        req = json.load(f)
    rows, features = [], None
    for n, first in enumerate(range(0, len(req["items"]), MAX_ITEMS)):
        part = dict(req, items=req["items"][first:first + MAX_ITEMS])
        part_path = "%s-%d.json" % (out_prefix, n)
        with open(part_path, "w") as f:
            json.dump(part, f)
        res = bench_peer(build, model, part_path, threads, "auto", 1, 0,
                         "%s-%d.out.json" % (out_prefix, n))
        rows += res["llama"]["logprobs"]
        features = res["llama"]["features"]
    return {"logprobs": rows, "features": features}
