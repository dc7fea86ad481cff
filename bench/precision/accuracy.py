"""accuracy.py — the precision benchmark's accuracy part (docs/benchmarks.md#precision):
bf16 and int8 log-probs against f32 arithmetic on the same stored weights,
beside llama.cpp's own bf16 and Q8_0 paths on the same files and requests, on
the Qwen3-0.6B geometry at the seeded std and at --projection-std 0.3, for a
200- and a 2,000-token query with 500 items each; prints Markdown tables with
each gate's verdict.

    python3 accuracy.py BUILD_DIR OUT_DIR

PRECISION_QUERIES (default "200 2000") and PRECISION_VARIANTS (default
"qwen3-0.6b qwen3-0.6b-std0.3") pick a subset. Every engine run is one
lmscore-local process, every llama.cpp run bench_peer processes (llama.py;
the build tree's ggml-ref target installs llama.cpp's libraries); the
results are kept as OUT_DIR/accuracy-*.json. Gate misses are reported, not
an exit status."""
import json
import math
import os
import sys

import local

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "peer"))
import llama  # noqa: E402

ITEMS, ITEM_TOKENS, LABELS = 500, 2, 4
QUERIES = (200, 2000)
VARIANTS = (("seeded std", "qwen3-0.6b"), ("projection std 0.3", "qwen3-0.6b-std0.3"))

# (name, candidate run, reference run, gates, queries): a run is (stored
# dtype, precision, isa, kv_cache_dtype); gates are (metric, bound,
# "max"|"min"|"peer"), None: reported only. int8 (one code per activation
# value) answers to another bound: its log-probs no further from f32 than
# those of llama.cpp's own Q8_0 path on the same file and request, measured
# beside it; int8x2 (two codes) is the exact int8 mode these gates hold.
# The engine quantises an f32 checkpoint as ggml's Q8_0 does, as the maker's
# Q8_0 files are (tests/ggml), so the Q8_0 file at int8 is also what int8
# from the f32 checkpoint gives.
# bf16 rounds x once where the tier's instruction takes bf16: held, as the
# seeds and their peers hold theirs, on the scores the API returns (the
# label's probability, and with apply_softmax its softmax over the labels)
# and on the items' ranking, and its log-probs no further from f32 than
# llama.cpp's own bf16 path's on the same file and request (a "peer" gate:
# its bound is that run's metric); bf16x2, the exact mode, on log-probs.
# A run whose precision is "llama.cpp" is llama.cpp's defaults (flash
# attention, f16 K and V) through bench_peer.
LLAMA_BF16 = ("bf16", "llama.cpp", "auto", "auto")
LLAMA_Q8 = ("q8_0", "llama.cpp", "auto", "auto")
BF16_GATES = (("score_max", 0.02, "max"), ("score_mean", 0.01, "max"),
              ("softmax_max", 0.02, "max"), ("softmax_mean", 0.01, "max"),
              ("spearman", 0.995, "min"), ("max", LLAMA_BF16, "peer"),
              ("mean", LLAMA_BF16, "peer"))
INT8_GATES = (("max", LLAMA_Q8, "peer"), ("mean", LLAMA_Q8, "peer"))
BF16X2_GATES = (("max", 0.02, "max"), ("mean", 0.01, "max"))
INT8X2_GATES = (("mean", 0.02, "max"), ("spearman", 0.995, "min"))
F32_REF = ("bf16", "f32", "auto", "auto")
Q8_F32_REF = ("q8_0", "f32", "auto", "auto")
COMPARISONS = (
    ("bf16 vs f32, same bf16 weights", ("bf16", "bf16", "auto", "auto"), F32_REF, BF16_GATES,
     QUERIES),
    ("bf16x2 vs f32, same bf16 weights", ("bf16", "bf16x2", "auto", "auto"), F32_REF,
     BF16X2_GATES, QUERIES),
    ("bf16x2, f32 keys and values, vs f32, same bf16 weights", ("bf16", "bf16x2", "auto", "f32"),
     F32_REF, BF16X2_GATES, QUERIES),
    ("int8x2 vs f32, same Q8_0 weights", ("q8_0", "int8x2", "auto", "auto"), Q8_F32_REF,
     INT8X2_GATES, QUERIES),
    ("int8 vs f32, same Q8_0 weights", ("q8_0", "int8", "auto", "auto"), Q8_F32_REF,
     INT8_GATES, QUERIES),
    ("llama.cpp's bf16 path vs f32, same bf16 weights", LLAMA_BF16, F32_REF, None, QUERIES),
    ("llama.cpp's Q8_0 path vs f32, same Q8_0 weights", LLAMA_Q8, Q8_F32_REF, None, QUERIES),
    ("int8 on Q8_0 weights vs f32 on the f32 weights", ("q8_0", "int8", "auto", "auto"),
     ("f32", "f32", "auto", "auto"), None, QUERIES),
    ("f32 on bf16 weights vs the f32 weights (rounding alone)", F32_REF,
     ("f32", "f32", "auto", "auto"), None, QUERIES),
)
# On a CPU with a tier above AVX2, the AVX2 tier runs the 200-token query
# too: within the gates, and with the CPU's tier's bits where the two
# compute the same sequence (kernels.h; avx512-bf16 and amx multiply bf16
# activations: another sequence, so "no" there is no fault).
AVX2_COMPARISONS = (
    ("bf16, AVX2 tier, vs f32, same bf16 weights", ("bf16", "bf16", "avx2", "auto"), F32_REF,
     BF16_GATES, QUERIES[:1]),
    ("int8x2, AVX2 tier, vs f32, same Q8_0 weights", ("q8_0", "int8x2", "avx2", "auto"),
     Q8_F32_REF, INT8X2_GATES, QUERIES[:1]),
    ("int8, AVX2 tier, vs f32, same Q8_0 weights", ("q8_0", "int8", "avx2", "auto"), Q8_F32_REF,
     INT8_GATES, QUERIES[:1]),
)
CPU_TIER_TWIN = {run: run[:2] + ("auto",) + run[3:] for _, run, _, _, _ in AVX2_COMPARISONS}


def ranks(values):
    """Ranks 1..n, ties sharing their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    r = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return r


def pearson(x, y):
    n = len(x)
    mx, my = sum(x) / n, sum(y) / n
    sxy = sum((a - mx) * (b - my) for a, b in zip(x, y))
    sxx = sum((a - mx) ** 2 for a in x)
    syy = sum((b - my) ** 2 for b in y)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else 1.0


def softmax(row):
    top = max(row)
    e = [math.exp(v - top) for v in row]
    return [v / sum(e) for v in e]


def max_mean(deltas):
    return max(deltas), sum(deltas) / len(deltas)


def compare(cand, ref):
    """max and mean |Δ logprob|, of the scores the API returns (exp of the
    log-prob; with apply_softmax, the softmax over the labels), the lowest
    Spearman correlation of one label's item ranking, and the share of
    items whose best label agrees."""
    c, r = cand["logprobs"], ref["logprobs"]
    deltas = [abs(a - b) for rc, rr in zip(c, r) for a, b in zip(rc, rr)]
    score_max, score_mean = max_mean([abs(math.exp(a) - math.exp(b)) for rc, rr in zip(c, r)
                                      for a, b in zip(rc, rr)])
    softmax_max, softmax_mean = max_mean([abs(a - b) for rc, rr in zip(c, r)
                                          for a, b in zip(softmax(rc), softmax(rr))])
    n_labels = len(r[0])
    spearman = min(pearson(ranks([row[j] for row in c]), ranks([row[j] for row in r]))
                   for j in range(n_labels))
    top1 = sum(max(range(n_labels), key=rc.__getitem__) == max(range(n_labels), key=rr.__getitem__)
               for rc, rr in zip(c, r)) / len(r)
    return {"max": max(deltas), "mean": sum(deltas) / len(deltas), "score_max": score_max,
            "score_mean": score_mean, "softmax_max": softmax_max, "softmax_mean": softmax_mean,
            "spearman": spearman, "top1": top1}


def gate_bound(name, bound, kind, peers):
    """A gate's bound: its number, or for a "peer" gate the same metric of
    the run it names (peers: run -> its metrics against the same reference)."""
    return peers[bound][name] if kind == "peer" else bound


def verdict(m, gates, peers):
    if gates is None:
        return "reported"
    missed = ["%s vs llama.cpp" % name if kind == "peer" else name
              for name, bound, kind in gates
              if (m[name] < gate_bound(name, bound, kind, peers) if kind == "min"
                  else m[name] > gate_bound(name, bound, kind, peers))]
    return "**MISSED** (%s)" % ", ".join(missed) if missed else "pass"


def gates_text(gates, peers):
    if gates is None:
        return "—"
    return ", ".join("%s ≤ llama.cpp's %.4g" % (name, gate_bound(name, bound, kind, peers))
                     if kind == "peer" else
                     "%s %s %g" % (name.replace("_", " "), "≤" if kind == "max" else "≥", bound)
                     for name, bound, kind in gates)


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    if not os.path.isdir(llama.lib_dir(build)):
        sys.exit("precision: no llama.cpp libraries at %s (cmake --build %s --target ggml-ref)"
                 % (llama.lib_dir(build), build))
    models = os.path.join(build, "models")
    queries = [int(q) for q in os.environ.get("PRECISION_QUERIES", "200 2000").split()]
    variants = os.environ.get("PRECISION_VARIANTS", " ".join(v[1] for v in VARIANTS)).split()
    comparisons = COMPARISONS + (AVX2_COMPARISONS if "avx512f" in local.cpu_flags() else ())
    missed = 0
    for title, stem in VARIANTS:
        if stem not in variants:
            continue
        print("\n### Accuracy: Qwen3-0.6B geometry, %s (%d items of %d tokens, %d labels)\n"
              % (title, ITEMS, ITEM_TOKENS, LABELS))
        print("| comparison | query | max \\|Δ logprob\\| | mean \\|Δ\\| | score max / mean "
              "\\|Δ\\| | with softmax max / mean \\|Δ\\| | min Spearman | top-1 agreement "
              "| same bits as the CPU's tier | gates | verdict |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|---|", flush=True)
        for q in queries:
            request = local.write_request(os.path.join(out, "accuracy-q%d.json" % q), q, ITEMS,
                                          ITEM_TOKENS, LABELS, seed=q)
            results = {}
            for run in sorted({run for _, a, b, _, qs in comparisons if q in qs
                               for run in (a, b)}):
                dtype, precision, isa, kv = run
                model = os.path.join(models, "%s-%s.gguf" % (stem, dtype))
                name = "accuracy-%s-q%d-%s-%s-%s-kv-%s" % (stem, q, dtype, precision, isa, kv)
                if precision == "llama.cpp":
                    results[run] = res = llama.logprobs(build, model, request, os.cpu_count(),
                                                        os.path.join(out, name))
                    print("  ran %s-%s.gguf through llama.cpp, Q=%d: its CPU backend %s"
                          % (stem, dtype, q, res["features"]), file=sys.stderr)
                    continue
                results[run] = res = local.score(build, model, request, precision, isa, kv=kv)
                with open(os.path.join(out, name + ".json"), "w") as f:
                    json.dump(res, f)
                print("  ran %s-%s.gguf --precision %s --isa %s --kv-cache-dtype %s, Q=%d: %s "
                      "(%s, keys and values %s), %.2f s"
                      % (stem, dtype, precision, isa, kv, q, res["precision"], res["kernels"],
                         res["kv_cache_dtype"], res["seconds"]), file=sys.stderr)
            for name, cand, ref, gates, qs in comparisons:
                if q not in qs:
                    continue
                m = compare(results[cand], results[ref])
                peers = {bound: compare(results[bound], results[ref])
                         for _, bound, kind in gates or () if kind == "peer"}
                twin = CPU_TIER_TWIN.get(cand)
                same = "—" if twin is None else (
                    "yes" if results[cand]["logprobs"] == results[twin]["logprobs"] else "no")
                v = verdict(m, gates, peers)
                missed += v.startswith("**")
                print("| %s | %d | %.4f | %.5f | %.4f / %.5f | %.4f / %.5f | %.5f | %.1f%% | %s "
                      "| %s | %s |"
                      % (name, q, m["max"], m["mean"], m["score_max"], m["score_mean"],
                         m["softmax_max"], m["softmax_mean"], m["spearman"], 100 * m["top1"],
                         same, gates_text(gates, peers), v), flush=True)
    print("\naccuracy: %d gate%s missed" % (missed, "" if missed == 1 else "s"))


if __name__ == "__main__":
    main()
