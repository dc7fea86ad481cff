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
bench_matmul's best shape at M = 2,000 in the column of the precision (the
tier's own kernels); oneDNN's columns are printed beside them for reference
(its int8 is one code per value with one scale per tensor, which the int8
accuracy gates do not admit: engine.md#precision)."""
import os
import subprocess
import sys

import local

TOKENS = 2000
MATMUL_REPS = "3"


def matmul_peaks(build):
    """{column: best GFLOP/s over the shapes at M = 2,000} from one
    bench_matmul run, and its first line (the kernels it ran)."""
    out = subprocess.run([os.path.join(build, "bench", "bench_matmul"), "--reps", MATMUL_REPS],
                         capture_output=True, check=True, text=True).stdout
    lines = out.splitlines()
    header = next(l for l in lines if l.startswith("| shape"))
    columns = [c.strip() for c in header.strip("|").split("|")]
    peaks = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) != len(columns) or cells[1] != str(TOKENS):
            continue
        for name, cell in zip(columns[2:], cells[2:]):
            if cell[:1].isdigit():
                peaks[name] = max(peaks.get(name, 0.0), float(cell.split()[0]))
    return peaks, lines[0]


def main():
    build, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    peaks, ran = matmul_peaks(build)
    print("  bench_matmul: %s" % ran, file=sys.stderr)
    request = local.write_request(os.path.join(out, "forward.json"), TOKENS - 1, 1, 1, 2, seed=11)
    flops = local.useful_flops(TOKENS)
    print("\n### Forward pass: %d tokens, Qwen3-0.6B geometry (%s)\n" % (TOKENS, local.cpu_name()))
    print("Useful FLOPs %.1f GFLOP; peak: the projection kernel of the same precision at the "
          "best shape, M = %d, in this run (bench_matmul: %s).\n" % (flops / 1e9, TOKENS, ran))
    print("| precision | tier | kernels | s | useful GFLOP/s | kernel peak | of peak | "
          "oneDNN peak | of oneDNN |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|")
    for precision in ("f32", "bf16", "int8", "int8x2"):
        model = local.precision_model(build, precision)
        res = local.score(build, model, request, precision, repeat=2)
        print("  %s: %.2f s (%s, %s)" % (precision, res["seconds"], res["precision"],
                                         res["kernels"]), file=sys.stderr)
        rate = flops / res["seconds"] / 1e9
        peak = peaks.get(precision)
        dnnl = peaks.get("dnnl " + precision)
        print("| %s | %s | %s | %.2f | %.0f | %s | %s | %s | %s |"
              % (precision, res["isa"], res["kernels"], res["seconds"], rate,
                 "%.0f" % peak if peak else "—", "%.1f%%" % (100 * rate / peak) if peak else "—",
                 "%.0f" % dnnl if dnnl else "—",
                 "%.1f%%" % (100 * rate / dnnl) if dnnl else "—"), flush=True)


if __name__ == "__main__":
    main()
