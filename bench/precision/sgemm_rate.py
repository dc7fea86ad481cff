"""sgemm_rate.py — OpenBLAS's sgemm rate under the kernel this process got
(OPENBLAS_CORETYPE is read when the library loads), at the shapes the f32
projections run: tiles of 384 rows × 512 columns, one thread each
(engine/compute/matmul.h), over K = 1024, 2048 and 3072 in the proportions
of one Qwen3-0.6B layer; and one 2-thread call of 2,000 × 3072 × 1024.
Prints one JSON object.

    python3 sgemm_rate.py"""
import ctypes
import json
import time

blas = ctypes.CDLL("libopenblas.so.0")
blas.openblas_get_corename.restype = ctypes.c_char_p
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
# Output columns per layer and row for each K: q, k, v, gate and up read
# K = 1024 (2048 + 2·1024 + 2·3072 columns), o K = 2048, down K = 3072.
TILE_MIX = ((1024, 10240), (2048, 1024), (3072, 1024))


def best_seconds(m, n, k, threads, reps=5):
    blas.openblas_set_num_threads(threads)
    a = (ctypes.c_float * (m * k))(*([0.5] * (m * k)))
    b = (ctypes.c_float * (n * k))(*([0.25] * (n * k)))
    c = (ctypes.c_float * (m * n))()
    best = None
    for rep in range(reps + 1):  # the first call warms up
        t0 = time.perf_counter()
        blas.cblas_sgemm(ROW_MAJOR, NO_TRANS, TRANS, m, n, k, ctypes.c_float(1.0), a, k, b, k,
                         ctypes.c_float(0.0), c, n)
        dt = time.perf_counter() - t0
        if rep and (best is None or dt < best):
            best = dt
    return best


def main():
    rows, cols = 384, 512
    flops = seconds = 0.0
    per_k = {}
    for k, layer_cols in TILE_MIX:
        t = best_seconds(rows, cols, k, 1)
        per_k[k] = 2.0 * rows * cols * k / t * 1e-9
        flops += 2.0 * rows * layer_cols * k
        seconds += t * layer_cols / cols
    full = best_seconds(2000, 3072, 1024, 2)
    print(json.dumps({"kernel": blas.openblas_get_corename().decode(),
                      "tile_gflops": flops / seconds * 1e-9,
                      "tile_gflops_by_k": per_k,
                      "full_gflops": 2.0 * 2000 * 3072 * 1024 / full * 1e-9}))


if __name__ == "__main__":
    main()
