"""forward.py — the precision benchmark's forward-pass part
(docs/benchmarks.md#precision): the 2,000-token forward pass of the
Qwen3-0.6B geometry in each precision, as useful GFLOP/s against the peak
of the same precision's projection kernel at the model's shapes, measured
by bench_matmul in the same run.

    python3 forward.py BUILD_DIR OUT_DIR

The forward pass is one sequence of 2,000 rows (a 1,999-token query and an
item of one token) with one scored row, the engine benchmark's definition
(bench/engine/flops.c): 2,220.9 GFLOP. Each configuration is one
lmscore-local process, --repeat 2, the second run timed. The peaks are
bench_matmul's best shape at M = 2,000: its "f32 tiles" (what the f32 path
runs) under each OpenBLAS kernel f32 runs here, and its bf16 and int8
columns; oneDNN's columns are printed beside them for reference (its int8
is one code per value with one scale per tensor, which the int8 accuracy
gates do not admit: engine.md#precision)."""
import os
import subprocess
import sys

import local

TOKENS = 2000
MATMUL_REPS = "3"


def matmul_peaks(build, kernel):
    """{column: best GFLOP/s over the shapes at M = 2,000} from one
    bench_matmul run under kernel, and its first line (the kernels it ran)."""
    out = subprocess.run([os.path.join(build, "bench", "bench_matmul"), "--reps", MATMUL_REPS],
                         env=local.kernel_env(kernel), capture_output=True, check=True,
                         text=True).stdout
    lines = out.splitlines()
    header = next(l for l in lines if l.startswith("| shape"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    peaks = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(columns) or cells[1] != str(TOKENS):
            continue
        for name, cell in zip(columns[2:], cells[2:]):
            peaks[name] = max(peaks.get(name, 0.0), float(cell.split()[0]))
    return peaks, lines[0]


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    kernels = ["default"] + (["SkylakeX"] if "avx512f" in local.cpu_flags() else [])
    peaks = {}
    for k in kernels:
        peaks[k], ran = matmul_peaks(build, k)
        print("  bench_matmul (%s): %s" % (k, ran), file=sys.stderr)
    request = local.write_request(os.path.join(out, "forward.json"), TOKENS - 1, 1, 1, 2, seed=11)
    flops = local.useful_flops(TOKENS)
    configs = [("f32 (%s)" % k, "f32", k, "f32 tiles") for k in kernels]
    configs += [("bf16", "bf16", "default", "bf16"), ("int8", "int8", "default", "int8")]
    print("\n### Forward pass: %d tokens, Qwen3-0.6B geometry (%s)\n" % (TOKENS, local.cpu_name()))
    print("Useful FLOPs %.1f GFLOP; peak: the projection kernel of the same precision at the "
          "best shape, M = %d, in this run (bench_matmul).\n" % (flops / 1e9, TOKENS))
    print("| precision | OpenBLAS kernel | s | useful GFLOP/s | kernel peak | of peak | "
          "oneDNN peak | of oneDNN |")
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for label, precision, kernel, column in configs:
        model = local.precision_model(build, precision)
        res = local.score(build, model, request, precision, repeat=2, kernel=kernel)
        print("  %s: %.2f s (%s, %s)" % (label, res["seconds"], res["precision"],
                                         res["kernels"]), file=sys.stderr)
        rate = flops / res["seconds"] / 1e9
        peak = peaks[kernel][column]
        dnnl = peaks[kernel].get("dnnl " + precision)
        print("| %s | %s | %.2f | %.0f | %.0f | %.1f%% | %s | %s |"
              % (label, kernel if precision == "f32" else "—", res["seconds"], rate, peak,
                 100 * rate / peak, "%.0f" % dnnl if dnnl else "—",
                 "%.1f%%" % (100 * rate / dnnl) if dnnl else "—"), flush=True)


if __name__ == "__main__":
    main()
