/*
 * test_attention.c — attention (attention.c) run over its plans against a
 * double-precision reference of attention.h's visibility rules, in segment
 * and dense mode: a packed request, an extend over cached rows, independent
 * sequences, items shorter and longer than a block, at several row periods.
 * Padding rows must come out as exact zeros.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "blas_probe.h"

#define N_HEADS    4
#define N_KV_HEADS 2
#define HEAD_DIM   16
#define Q_DIM      (N_HEADS * HEAD_DIM)
#define KV_DIM     (N_KV_HEADS * HEAD_DIM)
#define MAX_SEGS   16

typedef struct {
    int32_t n_rows, prefix, cached, n_segs;
    int32_t begin[MAX_SEGS], end[MAX_SEGS];
} batch;

/* Segments of the given lengths after `prefix` rows, each starting at a
 * multiple of the period, as score.c places them. */
static batch make_batch(int32_t period, int32_t prefix, int32_t cached, const int32_t *lens,
                        int32_t n)
{
    batch b = {.prefix = prefix, .cached = cached, .n_segs = n};
    int32_t row = (prefix + period - 1) / period * period;
    for (int32_t i = 0; i < n; i++) {
        b.begin[i] = row;
        b.end[i] = row + lens[i];
        row = (b.end[i] + period - 1) / period * period;
    }
    b.n_rows = row;
    return b;
}

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(seed >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
    }
}

/* The segment of row r, or -1 (a prefix or a padding row). */
static int32_t segment_of(const batch *b, int32_t r)
{
    for (int32_t s = 0; s < b->n_segs; s++)
        if (r >= b->begin[s] && r < b->end[s]) return s;
    return -1;
}

/* The keys row r sees, as indices into [cached rows, then batch rows]. */
static int32_t visible_keys(const batch *b, int32_t r, int32_t *keys)
{
    const int32_t seg = segment_of(b, r);
    if (r >= b->prefix && seg < 0) return 0; /* padding */
    int32_t n = 0;
    for (int32_t c = 0; c < b->cached; c++)
        keys[n++] = c;
    const int32_t own0 = seg < 0 ? 0 : b->begin[seg];
    for (int32_t c = 0; c < (seg < 0 ? 0 : b->prefix); c++)
        keys[n++] = b->cached + c;
    for (int32_t c = own0; c <= r; c++)
        keys[n++] = b->cached + c;
    return n;
}

/* out[r] for every row, in double, from the visible keys only. */
static void reference(const batch *b, const float *q, const float *k, const float *v,
                      const float *ck, const float *cv, double *out)
{
    const int32_t total = b->cached + b->n_rows;
    int32_t *keys = malloc((size_t)total * sizeof *keys);
    double *w = malloc((size_t)total * sizeof *w);
    assert_true(keys && w);
    for (int32_t r = 0; r < b->n_rows; r++) {
        const int32_t n = visible_keys(b, r, keys);
        for (int32_t h = 0; h < N_HEADS; h++) {
            const int32_t g = h / (N_HEADS / N_KV_HEADS);
            const float *qr = q + (size_t)r * Q_DIM + h * HEAD_DIM;
            double *o = out + (size_t)r * Q_DIM + h * HEAD_DIM;
            memset(o, 0, HEAD_DIM * sizeof *o);
            double mx = -INFINITY, sum = 0;
            for (int32_t i = 0; i < n; i++) {
                const int32_t j = keys[i];
                const float *kj = (j < b->cached ? ck + (size_t)j * KV_DIM
                                                 : k + (size_t)(j - b->cached) * KV_DIM) +
                                  g * HEAD_DIM;
                double s = 0;
                for (int32_t d = 0; d < HEAD_DIM; d++)
                    s += (double)qr[d] * kj[d];
                w[i] = s / sqrt((double)HEAD_DIM);
                if (w[i] > mx) mx = w[i];
            }
            for (int32_t i = 0; i < n; i++)
                sum += w[i] = exp(w[i] - mx);
            for (int32_t i = 0; i < n; i++) {
                const int32_t j = keys[i];
                const float *vj = (j < b->cached ? cv + (size_t)j * KV_DIM
                                                 : v + (size_t)(j - b->cached) * KV_DIM) +
                                  g * HEAD_DIM;
                for (int32_t d = 0; d < HEAD_DIM; d++)
                    o[d] += w[i] / sum * vj[d];
            }
        }
    }
    free(keys);
    free(w);
}

/* Random inputs for batch b, the reference, and each mode's output. */
static void check_batch(const batch *b, int32_t period, uint64_t seed)
{
    const int32_t br = blas_block_rows(period), t = b->n_rows;
    float *q = calloc((size_t)(t + br) * Q_DIM, sizeof *q); /* block_rows spare rows */
    float *k = malloc((size_t)t * KV_DIM * sizeof *k);
    float *v = malloc((size_t)t * KV_DIM * sizeof *v);
    float *ck = malloc((size_t)(b->cached + 1) * KV_DIM * sizeof *ck);
    float *cv = malloc((size_t)(b->cached + 1) * KV_DIM * sizeof *cv);
    float *out = malloc((size_t)t * Q_DIM * sizeof *out);
    double *ref = malloc((size_t)t * Q_DIM * sizeof *ref);
    assert_true(q && k && v && ck && cv && out && ref);
    fill(q, (size_t)(t + br) * Q_DIM, seed);
    fill(k, (size_t)t * KV_DIM, seed + 1);
    fill(v, (size_t)t * KV_DIM, seed + 2);
    fill(ck, (size_t)b->cached * KV_DIM, seed + 3);
    fill(cv, (size_t)b->cached * KV_DIM, seed + 4);
    reference(b, q, k, v, ck, cv, ref);

    const attn_geometry geo = {N_HEADS, N_KV_HEADS, HEAD_DIM, br};
    for (int dense = 0; dense < 2; dense++) {
        const attn_layout l = {.n_rows = t,
                               .prefix_rows = b->prefix,
                               .n_segments = b->n_segs,
                               .seg_begin = b->begin,
                               .seg_end = b->end,
                               .dense_mask = dense};
        attn_plan *plan = NULL;
        lms_error err = {0};
        assert_int_equal(attn_plan_create(&l, &geo, b->cached, &plan, &err), LMS_OK);
        fill(out, (size_t)t * Q_DIM, seed + 5); /* every row must be written */
        attn_run(plan, q, k, v, b->cached ? ck : NULL, b->cached ? cv : NULL, out);
        attn_plan_free(plan);
        for (int32_t r = 0; r < t; r++) {
            const bool padding = r >= b->prefix && segment_of(b, r) < 0;
            for (int32_t i = 0; i < Q_DIM; i++) {
                const float got = out[(size_t)r * Q_DIM + i];
                const double want = ref[(size_t)r * Q_DIM + i];
                if (padding ? got != 0.0f : !(fabs(got - want) <= 1e-5))
                    fail_msg("%s, period %d: row %d [%d] = %.9g, reference %.9g",
                             dense ? "dense" : "segment", period, r, i, got, want);
            }
        }
    }
    free(q);
    free(k);
    free(v);
    free(ck);
    free(cv);
    free(out);
    free(ref);
}

/* At a period of 1 (no padding) and of 48 (much padding). */
static void check_all(int32_t prefix, int32_t cached, const int32_t *lens, int32_t n)
{
    const int32_t periods[] = {1, 48};
    for (size_t p = 0; p < sizeof periods / sizeof *periods; p++) {
        const batch b = make_batch(periods[p], prefix, cached, lens, n);
        check_batch(&b, periods[p], 7 + p);
    }
}

/* A query of more than a block, then short items (grouped) and long ones
 * (cut into pieces). */
static void test_packed_request(void **state)
{
    (void)state;
    const int32_t lens[] = {5, 1, 40, 400, 17, 3, 500, 2};
    check_all(400, 0, lens, 8);
}

/* Items over a cached prefix, from row 0. */
static void test_extend_over_cached_rows(void **state)
{
    (void)state;
    const int32_t lens[] = {30, 1, 500, 9, 60};
    check_all(0, 123, lens, 5);
}

/* Whole sequences side by side: causal within each, nothing across. */
static void test_independent_sequences(void **state)
{
    (void)state;
    const int32_t lens[] = {3, 390, 1, 77, 384};
    check_all(0, 0, lens, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_request),
        cmocka_unit_test(test_extend_over_cached_rows),
        cmocka_unit_test(test_independent_sequences),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
