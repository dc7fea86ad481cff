/*
 * bench_int8_layouts — the int8 projection kernels on every layout of the
 * int8 format (engine/compute/weights.h): a matrix stored as each ggml block
 * type, packed as the engine packs it at load, against the same shape stored
 * as Q8_0, in one run, with one and with two codes per activation value.
 *
 *   bench_int8_layouts [N K ROWS REPS]    (default 2048 2048 64 7)
 *
 * The weights are normal values quantised by the model maker's ggml
 * quantisers; x is ROWS × K. On each kernel tier the CPU runs (AVX-512
 * VNNI, AVX2) it times y = x·Wᵀ on one thread REPS times per type,
 * alternating the types, by the process's CPU time (which other processes
 * on a shared machine do not inflate), and prints the best of each as a
 * Markdown table: milliseconds, integer GOP/s (2·N·K·ROWS per call), the
 * ratio to Q8_0 on the same tier, and the packed bytes per parameter.
 */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "clock.h"
#include "cpu.h"
#include "tier.h"
#include "make_model/mm_quant.h"
#include "matmul.h"
#include "weights_pack.h"

static const struct {
    lms_dtype engine;
    mm_dtype maker;
} TYPES[] = {
    {LMS_DTYPE_Q8_0, MM_DTYPE_Q8_0}, {LMS_DTYPE_Q4_0, MM_DTYPE_Q4_0},
    {LMS_DTYPE_Q5_0, MM_DTYPE_Q5_0}, {LMS_DTYPE_Q4_1, MM_DTYPE_Q4_1},
    {LMS_DTYPE_Q5_1, MM_DTYPE_Q5_1}, {LMS_DTYPE_Q4_K, MM_DTYPE_Q4_K},
    {LMS_DTYPE_Q5_K, MM_DTYPE_Q5_K}, {LMS_DTYPE_Q6_K, MM_DTYPE_Q6_K},
};
#define N_TYPES (sizeof TYPES / sizeof *TYPES)

static uint64_t rng = 0x2545F4914F6CDD1Dull;

static float normal(void)
{
    float s = 0.0f; /* Irwin–Hall: close enough to normal for weights */
    for (int i = 0; i < 4; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        s += (float)(rng >> 40) / (float)(1 << 24);
    }
    return (s - 2.0f) * 1.7320508f;
}

int main(int argc, char **argv)
{
    const int32_t n = argc > 1 ? atoi(argv[1]) : 2048, k = argc > 2 ? atoi(argv[2]) : 2048;
    const int32_t rows = argc > 3 ? atoi(argv[3]) : 64, reps = argc > 4 ? atoi(argv[4]) : 7;
    if (n < 1 || k < 256 || k % 256 || rows < 1 || reps < 1) {
        fprintf(stderr, "usage: bench_int8_layouts [N K ROWS REPS] (K a multiple of 256)\n");
        return 2;
    }
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    if (!cpu.avx2) {
        fprintf(stderr, "bench_int8_layouts: the int8 kernels need AVX2\n");
        return 1;
    }
    omp_set_num_threads(1);
    float *w = malloc((size_t)n * k * sizeof *w), *x = malloc((size_t)rows * k * sizeof *x);
    float *y = malloc((size_t)rows * n * sizeof *y);
    matmul_scratch *s = matmul_scratch_create(rows, k);
    lms_weights packed[N_TYPES];
    void *buffers[N_TYPES];
    if (!w || !x || !y || !s) return 1;
    for (size_t i = 0; i < (size_t)n * k; i++)
        w[i] = normal() / sqrtf((float)k);
    for (size_t i = 0; i < (size_t)rows * k; i++)
        x[i] = normal();
    for (size_t t = 0; t < N_TYPES; t++) {
        const uint64_t row_bytes = mm_dtype_bytes(TYPES[t].maker, k);
        uint8_t *stored = malloc((size_t)n * row_bytes);
        lms_error err = {0};
        if (!stored) return 1;
        for (int32_t r = 0; r < n; r++)
            mm_quantize_row(TYPES[t].maker, w + (size_t)r * k, k, stored + (size_t)r * row_bytes);
        const lms_pack_job job = {TYPES[t].engine, stored, &packed[t], false};
        if (lms_weights_alloc(&packed[t], TYPES[t].engine, LMS_WEIGHTS_Q8, n, k, &buffers[t],
                              &err) != LMS_OK ||
            lms_pack_run(&job, 1, NULL, &err) != LMS_OK) {
            fprintf(stderr, "bench_int8_layouts: %s\n", err.msg);
            return 1;
        }
        free(stored);
    }
    printf("%d × %d weights, %d rows, one thread, best of %d by CPU time\n\n", n, k, rows, reps);
    printf("| tier | codes per x | stored type | ms | GOP/s | vs Q8_0 | bytes/param |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- |\n");
    for (const compute_tier *const *tier = compute_tiers; *tier; tier++) {
        /* the vector tiers' Q8 kernels on the layout packed above; a tier
         * that owns its Q8 layout (q8_signed: the amx tiles) is not one */
        if ((*tier)->emulated || !(*tier)->runs_on(&cpu) || !(*tier)->kernels->q8 ||
            (*tier)->q8_signed)
            continue;
        const matmul_config cfg = {*tier};
        for (int32_t codes = 1; codes <= 2; codes++) {
            double best[N_TYPES];
            for (size_t t = 0; t < N_TYPES; t++) {
                best[t] = INFINITY;
                packed[t].x_codes = codes;
            }
            for (int32_t rep = 0; rep < reps; rep++)
                for (size_t t = 0; t < N_TYPES; t++) {
                    const double t0 = process_cpu_seconds();
                    matmul(&cfg, &packed[t], x, rows, KERNEL_STORE, y, s);
                    const double dt = process_cpu_seconds() - t0;
                    if (dt < best[t]) best[t] = dt;
                }
            for (size_t t = 0; t < N_TYPES; t++)
                printf("| %s (%s) | %d | %s | %.2f | %.0f | %.2f | %.4f |\n", cfg.tier->name,
                       cfg.tier->kernels->q8->isa, codes, lms_dtype_name(TYPES[t].engine),
                       best[t] * 1e3, 2.0 * n * k * rows / best[t] * 1e-9, best[0] / best[t],
                       (double)lms_weights_bytes(&packed[t]) / ((double)n * k));
        }
    }
    for (size_t t = 0; t < N_TYPES; t++)
        lms_free(buffers[t]);
    matmul_scratch_free(s);
    free(w);
    free(x);
    free(y);
    return 0;
}
