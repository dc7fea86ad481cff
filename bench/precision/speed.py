"""speed.py — the precision benchmark's speed part (docs/benchmarks.md#precision):
items/s of f32, bf16, int8 and int8x2 on the Qwen3-0.6B geometry in one run,
on the tier the CPU runs (`--isa auto`) and, where that is not AVX2, on the
forced AVX2 tier beside it.

    python3 speed.py BUILD_DIR OUT_DIR [WORKLOADS]

WORKLOADS: names from WORKLOAD_SHAPES (default "a q200 b"; "c" runs 500
items). Each configuration is one lmscore-local process, --repeat 2 (the
second run timed, no prefix cache), its best over ROUNDS rounds (the
configurations interleaved). Writes OUT_DIR/precision_speed.csv (items/s,
a row per workload, a column per configuration) for speed.gp's plot."""
import os
import sys

import local

ROUNDS = int(os.environ.get("PRECISION_ROUNDS", "1"))
# name: (query tokens, items, item tokens) — (a), (b), (c) of bench_engine,
# and q200, the 200-token query with 20 items of 20 tokens.
WORKLOAD_SHAPES = {"a": (300, 10, 20), "q200": (200, 20, 20), "b": (2000, 64, 20),
                   "c": (2000, 500, 20)}
PRECISIONS = ("f32", "bf16", "int8", "int8x2")


def configurations(flags):
    """(label, precision, isa): each precision on the CPU's own tier, then on
    the AVX2 tier where the CPU has a faster one."""
    isas = ["auto"] + (["avx2"] if "avx512f" in flags else [])
    return [("%s%s" % (p, " (AVX2 tier)" if isa == "avx2" else ""), p, isa)
            for isa in isas for p in PRECISIONS]


def main():
    build, out = sys.argv[1], sys.argv[2]
    names = (sys.argv[3] if len(sys.argv) > 3 else "a q200 b").split()
    os.makedirs(out, exist_ok=True)
    configs = configurations(local.cpu_flags())
    print("\n### Speed: Qwen3-0.6B geometry, items/s, one run (%s)\n" % local.cpu_name())
    print("f32 from the f32 file, bf16 from the bf16 file, int8 and int8x2 from the Q8_0 "
          "file; × f32: against f32 on the same tier in this run.")
    csv = open(os.path.join(out, "precision_speed.csv"), "w")
    csv.write("workload,%s\n" % ",".join(c[0] for c in configs))
    for name in names:
        q, n, l = WORKLOAD_SHAPES[name]
        request = local.write_request(os.path.join(out, "speed-%s.json" % name), q, n, l, 2,
                                      seed=7)
        best = {}
        for _ in range(ROUNDS):
            for label, precision, isa in configs:
                model = local.precision_model(build, precision)
                res = local.score(build, model, request, precision, isa, repeat=2)
                print("  %s %s: %.2f s (%s, %s)" % (name, label, res["seconds"], res["precision"],
                                                     res["kernels"]), file=sys.stderr)
                if label not in best or res["seconds"] < best[label]["seconds"]:
                    best[label] = res
        print("\n#### (%s) Q=%d, N=%d, L=%d\n" % (name, q, n, l))
        print("| configuration | tier | kernels | s | items/s | × f32 |")
        print("|---|---|---|---:|---:|---:|")
        for label, precision, isa in configs:
            res = best[label]
            f32 = best[next(c[0] for c in configs if c[1] == "f32" and c[2] == isa)]
            print("| %s | %s | %s | %.2f | %.2f | %.2f× |"
                  % (label, res["isa"], res["kernels"], res["seconds"], n / res["seconds"],
                     f32["seconds"] / res["seconds"]))
        csv.write("(%s) Q=%d N=%d L=%d,%s\n" % (name, q, n, l, ",".join(
            "%.4f" % (n / best[c[0]]["seconds"]) for c in configs)))
    csv.close()


if __name__ == "__main__":
    main()
