"""speed.py — the precision benchmark's speed part (docs/benchmarks.md#precision):
items/s of f32, bf16 and int8 on the Qwen3-0.6B geometry in one run, on the
AVX-512 kernels and on the forced AVX2 tier, with f32 under the OpenBLAS
kernel the environment gives and under the Haswell (AVX2) and SkylakeX
(AVX-512) kernels; and sgemm's rate under each of those kernels, to say
how much of f32's slowdown under a kernel the sgemm rate explains.

    python3 speed.py BUILD_DIR OUT_DIR [WORKLOADS]

WORKLOADS: names from WORKLOAD_SHAPES (default "a q200 b"; "c" runs 500
items). Each configuration is one lmscore-local process, --repeat 2 (the
second run timed, no prefix cache), its best over ROUNDS rounds (the
configurations interleaved). Writes OUT_DIR/precision_speed.csv (items/s,
a row per workload, a column per configuration) for speed.gp's plot."""
import json
import os
import subprocess
import sys

import local

ROUNDS = int(os.environ.get("PRECISION_ROUNDS", "1"))
# name: (query tokens, items, item tokens) — (a), (b), (c) of bench_engine,
# and q200, the 200-token query with 20 items of 20 tokens.
WORKLOAD_SHAPES = {"a": (300, 10, 20), "q200": (200, 20, 20), "b": (2000, 64, 20),
                   "c": (2000, 500, 20)}


def configurations(flags):
    """(label, precision, isa, OpenBLAS kernel): f32 on each kernel this CPU
    runs, then bf16 and int8 on both tiers."""
    kernels = ["default"] + (["SkylakeX"] if "avx512f" in flags else []) + ["Haswell"]
    out = [("f32 (%s)" % k, "f32", "auto", k) for k in kernels]
    out.append(("f32 (Haswell; AVX2 tier)", "f32", "avx2", "Haswell"))
    for isa in ("auto", "avx2"):
        for precision in ("bf16", "int8"):
            out.append(("%s%s" % (precision, " (AVX2 tier)" if isa == "avx2" else ""),
                        precision, isa, "default"))
    return out


def sgemm_rates(kernels):
    here = os.path.dirname(os.path.abspath(__file__))
    rates = {}
    for k in kernels:
        out = subprocess.run([sys.executable, os.path.join(here, "sgemm_rate.py")],
                             env=local.kernel_env(k), capture_output=True, check=True, text=True)
        rates[k] = json.loads(out.stdout)
    return rates


def fragility(best, rates, rows):
    """f32 under Haswell against SkylakeX: the time ratio, the tile sgemm
    rates' ratio, and the Haswell time the tile rate predicts when only the
    projections (rows × local.PROJECTION_FLOPS_PER_ROW on two threads, each at the
    one-thread tile rate) slow down."""
    hs, sx = best["f32 (Haswell)"]["seconds"], best["f32 (SkylakeX)"]["seconds"]
    avx2 = best["f32 (Haswell; AVX2 tier)"]["seconds"]
    r_hs, r_sx = rates["Haswell"]["tile_gflops"], rates["SkylakeX"]["tile_gflops"]
    predicted = sx + rows * local.PROJECTION_FLOPS_PER_ROW * (1 / r_hs - 1 / r_sx) * 1e-9 / 2
    print("\nf32 under Haswell against SkylakeX: %.2f× the time (with the AVX2 tier: %.2f×) for "
          "a %.2f× lower tile sgemm rate (full-size sgemm: %.2f×); the tile rates predict "
          "%.2f s for Haswell (%d rows), measured %.2f s."
          % (hs / sx, avx2 / sx, r_sx / r_hs,
             rates["SkylakeX"]["full_gflops"] / rates["Haswell"]["full_gflops"], predicted, rows,
             hs))


def main():
    build, out = sys.argv[1], sys.argv[2]
    names = (sys.argv[3] if len(sys.argv) > 3 else "a q200 b").split()
    os.makedirs(out, exist_ok=True)
    flags = local.cpu_flags()
    configs = configurations(flags)
    kernels = sorted({c[3] for c in configs}, key=[c[3] for c in configs].index)
    rates = sgemm_rates(kernels)
    print("\n### Speed: Qwen3-0.6B geometry, items/s, one run (%s)\n" % local.cpu_name())
    print("OpenBLAS sgemm under each kernel (GFLOP/s; engine tiles: 384 × 512, one thread, "
          "K mixed as in a layer; full: 2,000 × 3072 × 1024, 2 threads):\n")
    print("| OPENBLAS_CORETYPE | kernel | tile GFLOP/s | full GFLOP/s |")
    print("|---|---|---:|---:|")
    for k in kernels:
        print("| %s | %s | %.1f | %.1f |" % ("(unset)" if k == "default" else k,
                                             rates[k]["kernel"], rates[k]["tile_gflops"],
                                             rates[k]["full_gflops"]))
    csv = open(os.path.join(out, "precision_speed.csv"), "w")
    csv.write("workload,%s\n" % ",".join(c[0] for c in configs))
    for name in names:
        q, n, l = WORKLOAD_SHAPES[name]
        request = local.write_request(os.path.join(out, "speed-%s.json" % name), q, n, l, 2,
                                      seed=7)
        best = {}
        for _ in range(ROUNDS):
            for label, precision, isa, kernel in configs:
                model = local.precision_model(build, precision)
                res = local.score(build, model, request, precision, isa, repeat=2, kernel=kernel)
                print("  %s %s: %.2f s (%s, %s)" % (name, label, res["seconds"], res["precision"],
                                                     res["kernels"]), file=sys.stderr)
                if label not in best or res["seconds"] < best[label]["seconds"]:
                    best[label] = res
        base = best[configs[0][0]]["seconds"]
        fast = best["f32 (SkylakeX)"]["seconds"] if "f32 (SkylakeX)" in best else base
        print("\n#### (%s) Q=%d, N=%d, L=%d\n" % (name, q, n, l))
        print("| configuration | OpenBLAS kernel | s | items/s | × f32 (%s) | × f32 (SkylakeX) |"
              % rates["default"]["kernel"])
        print("|---|---|---:|---:|---:|---:|")
        for label, precision, isa, kernel in configs:
            s = best[label]["seconds"]
            blas_kernel = rates[kernel]["kernel"] if precision == "f32" else "—"
            print("| %s | %s | %.2f | %.2f | %.2f× | %.2f× |"
                  % (label, blas_kernel, s, n / s, base / s, fast / s))
        csv.write("(%s) Q=%d N=%d L=%d,%s\n" % (name, q, n, l, ",".join(
            "%.4f" % (n / best[c[0]]["seconds"]) for c in configs)))
        if "SkylakeX" in rates:
            fragility(best, rates, best["f32 (SkylakeX)"]["computed_tokens"])
    csv.close()
    print("\n(configurations' default OPENBLAS_CORETYPE: %s)" % os.environ.get(
        "OPENBLAS_CORETYPE", "unset"))


if __name__ == "__main__":
    main()
