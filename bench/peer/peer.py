"""peer.py — the engine against llama.cpp (docs/benchmarks.md#llamacpp),
part of `make bench`: speed on the peer workload and accuracy against the
engine's f32, on the same GGUF files, with llama.cpp's own prebuilt
libraries (the pinned npm package of tests/ggml/npm, in the build tree's
ggml-ref/).

    python3 peer.py BUILD_DIR OUT_DIR

The files: the Qwen3-0.6B geometry (lmscore-make-model --preset qwen3-0.6b)
as f16, bf16 and Q8_0 (models-peer), and as Q4_K_M made from the f16 file by
llama.cpp's own quantiser (llama_model_quantize, made here when missing or
older than the f16 file), at the preset's projection std and at
--projection-std 0.02 and 0.06.

- speed: the peer workload (a 200-token query, 20 items of 20 tokens, 4
  labels; random ids, seeded) on the preset's three files; per file, thread
  count and lmscore ISA tier, one bench_peer process: both sides hold the
  file and score in alternating rounds (PEER_ROUNDS, default 3, after one
  warm-up round), lmscore at --precision auto. The ratio is llama.cpp's
  median time over lmscore's.
- accuracy: 100 items of 20 tokens after the same query, on every file of
  every std: llama.cpp (its defaults: flash attention, f16 K and V) and
  lmscore --precision auto (bench_peer, one round), on the bf16 files
  lmscore --precision bf16x2 and on the quantised files lmscore --precision
  int8x2 (lmscore-local, the exact modes), on the f16 files lmscore
  --precision bf16 on a copy with the f16 values rounded to bf16 (what
  holding f16 weights as bf16 would multiply: the engine keeps f16 exact),
  against lmscore
  --precision f32 on the same file (lmscore-local): mean and max
  |Δ logprob|, max and mean |Δ| of the scores with apply_softmax (the
  softmax over the labels), each label's Spearman correlation of the item
  ranking, top-1 agreement. Before them, a parity check: llama.cpp's f32
  path against lmscore's f32 on the preset's f32 file.

PEER_PARTS (default "speed accuracy"), PEER_THREADS (default "2"; a list
runs each), PEER_ISA (default "auto"; "auto avx2" also runs lmscore's AVX2
tier) and PEER_VARIANTS (default "preset std0.02 std0.06", the accuracy
part's stds) pick subsets. Each bench_peer result is kept as
OUT_DIR/peer-*.json. Prints Markdown (run.sh heads it with the machine and
the command).
"""
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "precision"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "ggml"))
import accuracy  # noqa: E402
import llama  # noqa: E402
import local  # noqa: E402
from ggml_ref import Ggml  # noqa: E402

QUERY_TOKENS, LABELS = 200, 4
SPEED_ITEMS, ACCURACY_ITEMS, ITEM_TOKENS = 20, 100, 20
ROUNDS = int(os.environ.get("PEER_ROUNDS", "3"))
# variant: (title, file stem of its f16, bf16, Q8_0 and Q4_K_M files)
VARIANTS = {"preset": ("preset std (1/√fan_in)", "qwen3-0.6b"),
            "std0.02": ("projection std 0.02", "qwen3-0.6b-std0.02"),
            "std0.06": ("projection std 0.06", "qwen3-0.6b-std0.06")}
FILE_TYPES = ("f16", "bf16", "Q8_0", "Q4_K_M")


def model_file(build, stem, file_type):
    """models/STEM-f16.gguf ... ; the preset's f16 file is the benchmark
    model models/qwen3-0.6b.gguf."""
    if file_type == "f16" and stem == "qwen3-0.6b":
        name = stem
    else:
        name = "%s-%s" % (stem, file_type.lower())
    return os.path.join(build, "models", name + ".gguf")


def ensure_q4_k_m(build, lib_dir, stem):
    """llama.cpp's Q4_K_M of the variant's f16 file, made when missing or
    older than it."""
    src, dst = model_file(build, stem, "f16"), model_file(build, stem, "Q4_K_M")
    if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
        return
    tmp = dst + ".partial"
    Ggml(lib_dir).llama_quantize(src, tmp, "Q4_K_M", threads=os.cpu_count() or 1)
    os.replace(tmp, dst)
    print("  made %s with llama_model_quantize" % os.path.basename(dst), file=sys.stderr)


GGML_F32, GGML_F16, GGML_BF16 = 0, 1, 30


def f16_as_bf16(build, stem):
    """The variant's f16 file with every f16 tensor's values rounded to bf16
    (round to nearest even): what holding f16 weights as bf16 would
    multiply, made when missing or older than the f16 file."""
    import numpy as np  # Debian's python3-numpy, as ggml_ref.py
    from gguf_raw import RawGguf

    src = model_file(build, stem, "f16")
    dst = os.path.join(build, "models", "%s-f16-as-bf16.gguf" % stem)
    if os.path.exists(dst) and os.path.getmtime(dst) >= os.path.getmtime(src):
        return dst
    sizes = {GGML_F32: 4, GGML_F16: 2}
    raw = RawGguf(src, lambda ggml_type, n: sizes[ggml_type] * n)

    def rounded(t):
        bits = np.frombuffer(t.data, np.float16).astype(np.float32).view(np.uint32)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16).tobytes()

    tensors = [(t.name, t.ne, GGML_BF16 if t.ggml_type == GGML_F16 else t.ggml_type,
                len(t.data), (lambda t=t: rounded(t) if t.ggml_type == GGML_F16 else bytes(t.data)))
               for t in raw.tensors.values()]
    raw.write(dst + ".partial", tensors)
    os.replace(dst + ".partial", dst)
    return dst


def cpu_isa(flags):
    if "amx_tile" in flags:
        return "AMX"
    if "avx512_bf16" in flags:
        return "AVX-512 BF16"
    if "avx512_vnni" in flags or "avx512vnni" in flags:
        return "AVX-512 VNNI"
    if "avx512f" in flags:
        return "AVX-512"
    return "AVX2, no AVX-512" if "avx2" in flags else "no AVX2"


def load_average():
    with open("/proc/loadavg") as f:
        return " / ".join(f.read().split()[:3])


def cpu_seconds(side):
    """The process's CPU time over a side's rounds."""
    return sum(s * share for s, share in zip(side["seconds"], side["cpu_share"]))


def spread(seconds):
    return "%.2f s (%.2f–%.2f)" % (statistics.median(seconds), min(seconds), max(seconds))


def speed_request(out):
    return local.write_request(os.path.join(out, "peer-speed-request.json"), QUERY_TOKENS,
                               SPEED_ITEMS, ITEM_TOKENS, LABELS, seed=QUERY_TOKENS)


def speed(build, out, threads_list, isas):
    request = speed_request(out)
    cpu = "%s (%s)" % (local.cpu_name(), cpu_isa(local.cpu_flags()))
    print("\n### Speed: peer workload (%d-token query, %d items of %d tokens, %d labels), "
          "median of %d alternating rounds\n" % (QUERY_TOKENS, SPEED_ITEMS, ITEM_TOKENS, LABELS,
                                                 ROUNDS))
    print("Load average (1/5/15 min) at the start: %s.\n" % load_average())
    print("| CPU (ISA) | threads | file | lmscore `auto` (kernels) | llama.cpp | lmscore | ratio "
          "| CPU share llama.cpp / lmscore | ratio of CPU time |")
    print("|---|---:|---|---|---:|---:|---:|---|---:|", flush=True)
    features = set()
    for threads in threads_list:
        for isa in isas:
            for file_type in FILE_TYPES:
                model = model_file(build, VARIANTS["preset"][1], file_type)
                res = llama.bench_peer(build, model, request, threads, isa, ROUNDS, 1,
                                       os.path.join(out, "peer-speed-%s-t%d-%s.json"
                                                    % (file_type, threads, isa)))
                ls, es = res["llama"]["seconds"], res["lmscore"]["seconds"]
                e = res["lmscore"]
                features.add(res["llama"]["features"])
                print("| %s | %d | %s | %s (%s%s) | %s | %s | **%.2f×** | %.2f / %.2f | %.2f× |"
                      % (cpu, threads, file_type, e["precision"],
                         e["kernels"], "" if isa == "auto" else ", `--isa %s`" % isa, spread(ls),
                         spread(es), statistics.median(ls) / statistics.median(es),
                         statistics.mean(res["llama"]["cpu_share"]),
                         statistics.mean(e["cpu_share"]),
                         cpu_seconds(res["llama"]) / cpu_seconds(e)), flush=True)
    print("\nllama.cpp's CPU backend: %s. Load average at the end: %s."
          % ("; ".join(sorted(features)), load_average()))


def per_label_spearman(cand, ref):
    c, r = cand["logprobs"], ref["logprobs"]
    return [accuracy.pearson(accuracy.ranks([row[j] for row in c]),
                             accuracy.ranks([row[j] for row in r])) for j in range(len(r[0]))]


def parity(build, out, threads):
    """llama.cpp's f32 path against lmscore's f32 on the f32 file of the
    preset's draws (models-precision): outputs at the right positions."""
    model = local.precision_model(build, "f32")
    res = llama.bench_peer(build, model, speed_request(out), threads, "auto", 1, 0,
                           os.path.join(out, "peer-parity.json"),
                           ("--precision", "f32", "--llama-attention", "f32"))
    print("\nParity check: on `%s`, the peer workload's %d items, llama.cpp's f32 path (f32 K "
          "and V, no flash attention) against lmscore `--precision f32`: max |Δ logprob| "
          "%.2g.\n" % (os.path.basename(model), SPEED_ITEMS, res["max_abs_delta"]), flush=True)


def accuracy_part(build, out, threads, variants):
    request = local.write_request(os.path.join(out, "peer-accuracy-request.json"), QUERY_TOKENS,
                                  ACCURACY_ITEMS, ITEM_TOKENS, LABELS, seed=ACCURACY_ITEMS)
    print("\n### Accuracy against lmscore's f32 on the same file (%d-token query, %d items of "
          "%d tokens, %d labels)" % (QUERY_TOKENS, ACCURACY_ITEMS, ITEM_TOKENS, LABELS))
    parity(build, out, threads)
    print("| weights | file | scorer | mean \\|Δ logprob\\| | max \\|Δ\\| | with softmax max / "
          "mean \\|Δ\\| | Spearman per label (lowest first) | top-1 agreement |")
    print("|---|---|---|---:|---:|---:|---|---:|", flush=True)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    for variant in variants:
        title, stem = VARIANTS[variant]
        for file_type in FILE_TYPES:
            model = model_file(build, stem, file_type)
            res = llama.bench_peer(build, model, request, threads, "auto", 1, 0,
                                   os.path.join(out, "peer-accuracy-%s-%s.json"
                                                % (stem, file_type)))
            ref = local.score(build, model, request, "f32")
            sides = [("llama.cpp", res["llama"]),
                     ("lmscore `auto` (%s)" % res["lmscore"]["precision"], res["lmscore"])]
            exact = {"f16": None, "bf16": "bf16x2"}.get(file_type, "int8x2")
            if exact:
                sides.append(("lmscore `%s`" % exact, local.score(build, model, request, exact)))
            if file_type == "f16":
                sides.append(("lmscore `bf16` on its values rounded to bf16",
                              local.score(build, f16_as_bf16(build, stem), request, "bf16")))
            for name, cand in sides:
                m = accuracy.compare(cand, ref)
                rho = sorted(per_label_spearman(cand, ref))
                print("| %s | %s | %s | %.5f | %.4f | %.4f / %.5f | %s | %.0f%% |"
                      % (title, file_type, name, m["mean"], m["max"], m["softmax_max"],
                         m["softmax_mean"], " / ".join("%.5f" % x for x in rho),
                         100 * m["top1"]), flush=True)


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    lib_dir = llama.lib_dir(build)
    if not os.path.isdir(lib_dir):
        sys.exit("peer: no llama.cpp libraries at %s (cmake --build %s --target ggml-ref)"
                 % (lib_dir, build))
    parts = os.environ.get("PEER_PARTS", "speed accuracy").split()
    threads_list = [int(t) for t in os.environ.get("PEER_THREADS", "2").split()]
    isas = os.environ.get("PEER_ISA", "auto").split()
    variants = os.environ.get("PEER_VARIANTS", " ".join(VARIANTS)).split()
    needed = set(variants if "accuracy" in parts else []) | ({"preset"} if "speed" in parts else set())
    for variant in sorted(needed):
        ensure_q4_k_m(build, lib_dir, VARIANTS[variant][1])
    if "speed" in parts:
        speed(build, out, threads_list, isas)
    if "accuracy" in parts:
        accuracy_part(build, out, threads_list[0], variants)


if __name__ == "__main__":
    main()
