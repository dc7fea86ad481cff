#!/usr/bin/python3
"""calibrate.py — measures the selector's cost units for one precision.

    calibrate.py LMSCORE_LOCAL MODEL PRECISION [--repeat N]

The selector (engine/score/selector.c) prices an algorithm as
    rows · R + pairs · P + passes · S
with R the linear-layer FLOPs of one row, P the attention FLOPs of one
visible (query, key) pair, and S one forward pass. Only the ratios
P_weight = (seconds per pair-FLOP) / (seconds per row-FLOP) and
S_rows = (seconds per pass) / (seconds per row) decide its choices.

This script times lmscore-local on requests whose work is dominated by each
term in turn (many short passes; one pass of many short rows; one pass over a
long query), fits seconds = a·rows + b·pairs + c·passes by least squares and
prints the two ratios, then checks the fit on prefill_extend shapes it did not
see. Item lengths are multiples of 24 so that the f32 path's row period adds
(almost) no padding the model does not know about.
"""
import json
import os
import random
import subprocess
import sys
import tempfile


def request(q, n, length, seed):
    rng = random.Random(seed)
    tok = lambda k: [rng.randrange(1000, 100000) for _ in range(k)]
    return {"query": tok(q), "items": [tok(length) for _ in range(n)],
            "label_token_ids": [9454, 2753]}


def work(algorithm, q, n, length):
    """(rows, pairs, passes) per layer as the selector counts them."""
    causal = lambda s: s * (s + 1) / 2
    if algorithm == "serial":
        return n * (q + length), n * causal(q + length), n
    items = n * length, n * (length * q + causal(length))
    if algorithm == "packed_segment":
        return q + items[0], causal(q) + items[1], 1
    return q + items[0], causal(q) + items[1], 2  # prefill_extend, prefix not cached


def seconds(local, model, precision, algorithm, req, repeat):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(req, f)
    try:
        out = subprocess.run([local, "--model", model, "--request", f.name, "--precision",
                              precision, "--algorithm", algorithm, "--repeat", str(repeat),
                              "--prefix-cache-mib", "0"],
                             check=True, capture_output=True, text=True).stdout
    finally:
        os.unlink(f.name)
    return json.loads(out)["seconds"]


def solve3(rows):
    """Least squares for t = a·x0 + b·x1 + c·x2 (normal equations, 3×3)."""
    m = [[sum(r[0][i] * r[0][j] for r in rows) for j in range(3)] for i in range(3)]
    v = [sum(r[0][i] * r[1] for r in rows) for i in range(3)]
    for col in range(3):  # Gauss-Jordan with partial pivoting
        p = max(range(col, 3), key=lambda r: abs(m[r][col]))
        m[col], m[p], v[col], v[p] = m[p], m[col], v[p], v[col]
        for r in range(3):
            if r != col:
                f = m[r][col] / m[col][col]
                m[r] = [a - f * b for a, b in zip(m[r], m[col])]
                v[r] -= f * v[col]
    return [v[i] / m[i][i] for i in range(3)]


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    local, model, precision = sys.argv[1:4]
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 2
    fit_shapes = [("serial", 24, 16, 24), ("serial", 48, 8, 24),
                  ("packed_segment", 24, 40, 24), ("packed_segment", 24, 64, 24),
                  ("packed_segment", 1200, 2, 24), ("packed_segment", 1800, 2, 24)]
    check_shapes = [("prefill_extend", 300, 10, 24), ("prefill_extend", 1000, 32, 24),
                    ("packed_segment", 300, 10, 24)]
    samples = []
    for k, (alg, q, n, length) in enumerate(fit_shapes + check_shapes):
        t = seconds(local, model, precision, alg, request(q, n, length, k), repeat)
        samples.append(((alg, q, n, length), work(alg, q, n, length), t))
        print(f"{precision} {alg:15s} Q={q:5d} N={n:3d} L={length}: {t:.3f} s", flush=True)
    a, b, c = solve3([(w, t) for _, w, t in samples[:len(fit_shapes)]])
    print(f"{precision} fit: {a * 1e3:.4f} ms/row, {b * 1e9:.3f} ns/pair, {c * 1e3:.1f} ms/pass")
    for (alg, q, n, length), (r, p, s), t in samples[len(fit_shapes):]:
        print(f"{precision} check {alg} Q={q} N={n}: measured {t:.3f} s, "
              f"model {a * r + b * p + c * s:.3f} s")
    print(f"{precision} units: pass_rows {c / a:.1f}, pair_row_ratio {b / a:.3g}")


if __name__ == "__main__":
    main()
