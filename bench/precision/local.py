"""local.py — what the precision benchmark's parts share: seeded requests of
random token ids, one lmscore-local run (its JSON and the process's peak
RSS), and the geometry's useful FLOPs."""
import json
import os
import random
import subprocess
import sys

# Random ids below 151,643 are ordinary tokens of the Qwen3 tokenizer that
# every benchmark model here carries.
VOCAB = 151643
# The stored type each precision runs from in the speed and forward parts.
STORED = {"f32": "f32", "bf16": "bf16", "int8": "q8_0", "int8x2": "q8_0"}


def precision_model(build, precision):
    """The Qwen3-0.6B checkpoint precision runs from (models-precision)."""
    return os.path.join(build, "models", "qwen3-0.6b-%s.gguf" % STORED[precision])

# Useful FLOPs of the Qwen3-0.6B geometry (bench/engine/flops.c): the
# projections per row, attention per visible (query, key) pair, the LM head
# per scored row.
PROJECTION_FLOPS_PER_ROW = 880.8e6
ATTENTION_FLOPS_PER_PAIR = 229376
HEAD_FLOPS_PER_ROW = 311.2e6


def useful_flops(tokens):
    """One sequence of tokens rows, causal, one scored row."""
    return (tokens * PROJECTION_FLOPS_PER_ROW + tokens * (tokens + 1) // 2 *
            ATTENTION_FLOPS_PER_PAIR + HEAD_FLOPS_PER_ROW)


def write_request(path, query_tokens, n_items, item_tokens, n_labels, seed):
    """A request of random ids: a query, n_items items, n_labels labels."""
    rng = random.Random(seed)
    ids = lambda n: [rng.randrange(VOCAB) for _ in range(n)]
    req = {"query": ids(query_tokens),
           "items": [ids(item_tokens) for _ in range(n_items)],
           "label_token_ids": rng.sample(range(VOCAB), n_labels)}
    with open(path, "w") as f:
        json.dump(req, f)
    return path


def score(build, model, request, precision="auto", isa="auto", repeat=1, algorithm="auto",
          kv="auto"):
    """Runs lmscore-local once with no prefix cache (every repetition is
    cold); returns its JSON result with "peak_rss_bytes" (the process's
    VmHWM: the load and the requests) added. Exits on any failure."""
    cmd = [os.path.join(build, "tools", "lmscore-local"), "--model", model, "--request", request,
           "--precision", precision, "--isa", isa, "--repeat", str(repeat),
           "--prefix-cache-mib", "0", "--algorithm", algorithm, "--kv-cache-dtype", kv]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE)
    out = proc.stdout.read()
    proc.stdout.close()
    _, status, usage = os.wait4(proc.pid, 0)
    if status != 0:
        sys.exit("precision: %s failed (status %d): %s" % (" ".join(cmd), status, out[-500:]))
    res = json.loads(out)
    res["peak_rss_bytes"] = usage.ru_maxrss * 1024
    return res


def cpu_flags():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("flags"):
                return set(line.split(":", 1)[1].split())
    return set()


def cpu_name():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "unknown CPU"
