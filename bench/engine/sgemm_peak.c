/*
 * sgemm_peak.c — timing OpenBLAS sgemm at fixed shapes (see sgemm_peak.h).
 */
#include "sgemm_peak.h"

#include <cblas.h>
#include <stdlib.h>

#include "clock.h"

static float *random_matrix(size_t n, unsigned *seed)
{
    float *m = malloc(n * sizeof(float));
    if (!m) return NULL;
    for (size_t i = 0; i < n; i++)
        m[i] = (float)rand_r(seed) / (float)RAND_MAX - 0.5f;
    return m;
}

static int measure_one(sgemm_shape_result *s, int reps)
{
    unsigned seed = 1234;
    float *a = random_matrix((size_t)s->m * s->k, &seed);
    float *b = random_matrix((size_t)s->n * s->k, &seed);
    float *c = malloc((size_t)s->m * s->n * sizeof(float));
    int rc = -1;
    if (a && b && c) {
        const double flops = 2.0 * s->m * s->n * s->k;
        double best_cpu = 0;
        s->best_seconds = 0;
        for (int r = -1; r < reps; r++) { /* r = -1: warm-up, not timed */
            const double c0 = process_cpu_seconds(), t0 = monotonic_seconds();
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, s->m, s->n, s->k, 1.0f, a, s->k, b,
                        s->k, 0.0f, c, s->n);
            const double dt = monotonic_seconds() - t0, dc = process_cpu_seconds() - c0;
            if (r < 0) continue;
            if (s->best_seconds == 0 || dt < s->best_seconds) s->best_seconds = dt;
            if (dc > 0 && (best_cpu == 0 || dc < best_cpu)) best_cpu = dc;
        }
        s->best_gflops = flops / s->best_seconds * 1e-9;
        s->best_cpu_gflops = best_cpu > 0 ? flops / best_cpu * 1e-9 : 0;
        rc = 0;
    }
    free(a);
    free(b);
    free(c);
    return rc;
}

int sgemm_measure(sgemm_shape_result *shapes, int n_shapes, int reps)
{
    for (int i = 0; i < n_shapes; i++)
        if (measure_one(&shapes[i], reps) != 0) return -1;
    return 0;
}
