/*
 * bench_lm_head — the LM head (engine/compute/lm_head.c) against one
 * OpenBLAS sgemm over the chunk's rows and a log-softmax over the
 * full-vocabulary logits, on a real model's output matrix in f32 (the
 * engine's panels, and a row-major copy for sgemm), in one run.
 *
 *   bench_lm_head MODEL [REPS]
 *
 * For 1, 10 and 64 score rows (a single item, a small request, a full
 * chunk) it times both ways alternately, REPS times (default 10), and prints
 * the best of each in a Markdown table with their ratio and the rate at
 * which each reads the output matrix. The two ways must agree on the
 * log-probs (to 1e-4); the exit status is 1 when they do not.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "alloc.h"
#include "engine_internal.h"
#include "lm_head.h"
#include "vec.h"

static const int32_t ROWS[] = {1, 10, 64};
#define MAX_ROWS 64

/* The sgemm way: rmsnorm, logits = h · Woutᵀ, log-softmax per row. */
static int sgemm_head(const vec_kernels *vec, const lms_model *m, const float *head, const float *x,
                      int32_t n, const int32_t *labels, int32_t n_labels, float *h, float *logits,
                      float *out)
{
    const lms_model_config *c = &m->cfg;
    const int32_t d = c->d_model, v = c->vocab_size;
    for (int32_t i = 0; i < n; i++)
        vec->rmsnorm(h + (size_t)i * d, x + (size_t)i * d, m->output_norm, d, c->rms_eps);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, n, v, d, 1.0f, h, d, head, d, 0.0f, logits,
                v);
#pragma omp parallel for if (n > 1)
    for (int32_t i = 0; i < n; i++) {
        float *l = logits + (size_t)i * v;
        float mx = vec->max(l, v);
        double lse = mx;
        for (int32_t j = 0; j < n_labels; j++)
            out[(size_t)i * n_labels + j] = l[labels[j]];
        lse += log(vec->exp_shifted(l, v, mx));
        for (int32_t j = 0; j < n_labels; j++)
            out[(size_t)i * n_labels + j] = (float)(out[(size_t)i * n_labels + j] - lse);
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: bench_lm_head MODEL [REPS]\n");
        return 2;
    }
    const int reps = argc == 3 ? atoi(argv[2]) : 10;
    lms_engine *e;
    lms_error err = {0};
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.precision = LMS_PRECISION_F32; /* the f32 head against sgemm */
    if (lms_engine_open(argv[1], &opt, &e, &err) != LMS_OK) {
        fprintf(stderr, "bench_lm_head: %s\n", err.msg);
        return 1;
    }
    const lms_model *m = e->model;
    const int32_t d = m->cfg.d_model, v = m->cfg.vocab_size;
    const int32_t labels[] = {0, v / 2, v - 1};
    float *x = lms_alloc((size_t)MAX_ROWS * d * sizeof(float));
    float *h = lms_alloc((size_t)MAX_ROWS * d * sizeof(float));
    float *logits = lms_alloc((size_t)MAX_ROWS * v * sizeof(float));
    float *w = lms_alloc((size_t)v * d * sizeof(float)); /* the head, row-major */
    float out_head[MAX_ROWS * 3], out_sgemm[MAX_ROWS * 3];
    if (!x || !h || !logits || !w || reps < 1) {
        fprintf(stderr, "bench_lm_head: %s\n", reps < 1 ? "REPS must be >= 1" : "no memory");
        return 1;
    }
    for (size_t i = 0; i < (size_t)MAX_ROWS * d; i++)
        x[i] = (float)((i * 7919u) % 2000u) / 1000.0f - 1.0f;
    for (int32_t r = 0; r < v; r++)
        lms_weights_row(&e->weights->output, r, w + (size_t)r * d);
    const double w_bytes = (double)v * d * sizeof(float);
    printf("LM head of %s (vocabulary %d × %d), OpenMP threads: %d, best of %d\n\n", m->cfg.name, v,
           d, omp_get_max_threads(), reps);
    printf("| rows | threads | lm_head ms | sgemm + log-softmax ms | speedup | lm_head reads W at "
           "| sgemm at |\n| ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    int rc = 0;
    for (size_t k = 0; k < sizeof ROWS / sizeof *ROWS; k++) {
        const int32_t n = ROWS[k];
        double best_head = INFINITY, best_sgemm = INFINITY;
        for (int r = 0; r <= reps; r++) { /* rep 0 warms up */
            double t0 = monotonic_seconds();
            if (lm_head_label_logprobs(m, &e->weights->output, &e->tune.matmul, x, NULL, n, labels,
                                       3, out_head, &err) != LMS_OK) {
                fprintf(stderr, "bench_lm_head: %s\n", err.msg);
                return 1;
            }
            double t1 = monotonic_seconds();
            sgemm_head(e->tune.matmul.tier->kernels->vec, m, w, x, n, labels, 3, h, logits,
                       out_sgemm);
            double t2 = monotonic_seconds();
            if (r > 0 && t1 - t0 < best_head) best_head = t1 - t0;
            if (r > 0 && t2 - t1 < best_sgemm) best_sgemm = t2 - t1;
        }
        for (int32_t i = 0; i < n * 3; i++)
            if (fabsf(out_head[i] - out_sgemm[i]) > 1e-4f) {
                fprintf(stderr, "bench_lm_head: %d rows, log-prob %d: %.6f vs sgemm %.6f\n", n, i,
                        out_head[i], out_sgemm[i]);
                rc = 1;
            }
        printf("| %d | %d | %.2f | %.2f | %.2f× | %.1f GB/s | %.1f GB/s |\n", n,
               omp_get_max_threads(), best_head * 1e3, best_sgemm * 1e3, best_sgemm / best_head,
               w_bytes / best_head * 1e-9, w_bytes / best_sgemm * 1e-9);
        fflush(stdout);
    }
    lms_free(x);
    lms_free(h);
    lms_free(logits);
    lms_free(w);
    lms_engine_close(e);
    return rc;
}
