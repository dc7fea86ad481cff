/*
 * test_lm_head.c — the LM head's label log-probs against a double-precision
 * reference, and its exactness promises: a row's result is bit for bit the
 * same alone or among other rows (in any order, across chunk boundaries) and
 * with one thread or several, on each compute tier (tier_fixture.h).
 * Synthetic f32 heads with awkward shapes: widths that are not a multiple
 * of a vector, vocabularies that end in a short block and a short panel,
 * labels on block edges.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "lm_head.h"
#include "tier_fixture.h"
#include "weights_pack.h"

/* The tier under test (main). */
static matmul_config mm;

typedef struct {
    lms_model model;
    lms_weights head;    /* the output matrix w, packed as F32 */
    void *head_buffer;   /* its data */
    float *norm, *w, *x; /* x: n_rows × d hidden states */
    int32_t n_rows;
} head_fixture;

static uint64_t rng_state;

static float uniform(float lo, float hi)
{
    rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (hi - lo) * (float)((rng_state >> 40) * (1.0 / 16777216.0));
}

static void fixture_make(head_fixture *f, int32_t d, int32_t vocab, int32_t n_rows, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    rng_state = seed;
    f->model.cfg.d_model = d;
    f->model.cfg.vocab_size = vocab;
    f->model.cfg.rms_eps = 1e-6f;
    f->n_rows = n_rows;
    f->norm = malloc((size_t)d * sizeof(float));
    f->w = malloc((size_t)vocab * d * sizeof(float));
    f->x = malloc((size_t)n_rows * d * sizeof(float));
    assert_true(f->norm && f->w && f->x);
    for (int32_t i = 0; i < d; i++)
        f->norm[i] = uniform(0.5f, 1.5f);
    /* a spread of logits of a few units, like a trained head */
    for (size_t i = 0; i < (size_t)vocab * d; i++)
        f->w[i] = uniform(-1.0f, 1.0f) * 3.0f / sqrtf((float)d);
    for (size_t i = 0; i < (size_t)n_rows * d; i++)
        f->x[i] = uniform(-2.0f, 2.0f);
    f->model.output_norm = f->norm;
    lms_error err = {0};
    assert_int_equal(lms_weights_alloc(&f->head, LMS_DTYPE_F32, LMS_WEIGHTS_F32, vocab, d,
                                       &f->head_buffer, &err),
                     LMS_OK);
    const lms_pack_job job = {LMS_DTYPE_F32, f->w, &f->head, false};
    assert_int_equal(lms_pack_run(&job, 1, NULL, &err), LMS_OK);
}

static void fixture_free(head_fixture *f)
{
    lms_free(f->head_buffer);
    free(f->norm);
    free(f->w);
    free(f->x);
}

/* log p(label) for row r, all in double. */
static double reference_logprob(const head_fixture *f, int32_t r, int32_t label)
{
    const int32_t d = f->model.cfg.d_model, vocab = f->model.cfg.vocab_size;
    const float *x = f->x + (size_t)r * d;
    double ss = 0.0;
    for (int32_t k = 0; k < d; k++)
        ss += (double)x[k] * x[k];
    double inv = 1.0 / sqrt(ss / d + f->model.cfg.rms_eps);
    double *logit = malloc((size_t)vocab * sizeof(double));
    assert_non_null(logit);
    double mx = -INFINITY;
    for (int32_t v = 0; v < vocab; v++) {
        double s = 0.0;
        for (int32_t k = 0; k < d; k++)
            s += x[k] * inv * f->norm[k] * f->w[(size_t)v * d + k];
        logit[v] = s;
        mx = s > mx ? s : mx;
    }
    double sum = 0.0;
    for (int32_t v = 0; v < vocab; v++)
        sum += exp(logit[v] - mx);
    double lp = logit[label] - mx - log(sum);
    free(logit);
    return lp;
}

static float *score(const head_fixture *f, const int32_t *rows, int32_t n, const int32_t *labels,
                    int32_t n_labels)
{
    float *out = malloc((size_t)n * n_labels * sizeof(float));
    assert_non_null(out);
    lms_error err;
    lms_status st = lm_head_label_logprobs(&f->model, &f->head, &mm, f->x, rows, n, labels,
                                           n_labels, out, &err);
    if (st != LMS_OK) fail_msg("lm_head_label_logprobs: %s", err.msg);
    return out;
}

/* Shapes: d not a multiple of 16 (the short last lane step), vocabularies
 * with a short last block, more rows than one chunk. */
static const struct {
    int32_t d, vocab, n_rows;
} SHAPES[] = {{64, 3000, 7}, {40, 2049, 70}, {17, 1024, 3}, {128, 1500, 130}};

static void test_matches_double_reference(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++) {
        head_fixture f;
        fixture_make(&f, SHAPES[s].d, SHAPES[s].vocab, SHAPES[s].n_rows, 100 + s);
        const int32_t vocab = SHAPES[s].vocab;
        const int32_t labels[] = {0, 1023, vocab > 1024 ? 1024 : 5, vocab - 1, 77};
        const int32_t n_labels = (int32_t)(sizeof labels / sizeof *labels);
        float *out = score(&f, NULL, f.n_rows, labels, n_labels);
        for (int32_t r = 0; r < f.n_rows; r += 1 + f.n_rows / 5)
            for (int32_t j = 0; j < n_labels; j++) {
                double want = reference_logprob(&f, r, labels[j]);
                double got = out[(size_t)r * n_labels + j];
                if (fabs(got - want) > 1e-4)
                    fail_msg("d=%d vocab=%d row %d label %d: %.7f, reference %.7f", SHAPES[s].d,
                             vocab, r, labels[j], got, want);
            }
        free(out);
        fixture_free(&f);
    }
}

/* Each row scored alone, then all rows in reverse order through the rows
 * index (other neighbours, other tile and chunk positions): the same bits. */
static void test_row_isolation(void **state)
{
    (void)state;
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++) {
        head_fixture f;
        fixture_make(&f, SHAPES[s].d, SHAPES[s].vocab, SHAPES[s].n_rows, 200 + s);
        const int32_t labels[] = {3, SHAPES[s].vocab - 2};
        const int32_t n = f.n_rows;
        int32_t *reversed = malloc((size_t)n * sizeof(int32_t));
        assert_non_null(reversed);
        for (int32_t i = 0; i < n; i++)
            reversed[i] = n - 1 - i;
        float *all = score(&f, reversed, n, labels, 2);
        for (int32_t r = 0; r < n; r++) {
            float *one = score(&f, &r, 1, labels, 2);
            if (memcmp(one, all + (size_t)(n - 1 - r) * 2, 2 * sizeof(float)) != 0)
                fail_msg("d=%d row %d: alone %.9g %.9g, among %d rows %.9g %.9g", SHAPES[s].d, r,
                         one[0], one[1], n, all[(size_t)(n - 1 - r) * 2],
                         all[(size_t)(n - 1 - r) * 2 + 1]);
            free(one);
        }
        free(all);
        free(reversed);
        fixture_free(&f);
    }
}

static void test_thread_count_independent(void **state)
{
    (void)state;
    head_fixture f;
    fixture_make(&f, 96, 5000, 21, 300);
    const int32_t labels[] = {0, 2500, 4999};
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    float *one = score(&f, NULL, f.n_rows, labels, 3);
    omp_set_num_threads(3);
    float *three = score(&f, NULL, f.n_rows, labels, 3);
    omp_set_num_threads(saved);
    assert_memory_equal(one, three, (size_t)f.n_rows * 3 * sizeof(float));
    free(one);
    free(three);
    fixture_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_matches_double_reference),
        cmocka_unit_test(test_row_isolation),
        cmocka_unit_test(test_thread_count_independent),
    };
    const compute_tier *tiers[FIXTURE_MAX_TIERS];
    const int n_tiers = fixture_tiers(tiers);
    int failed = 0;
    for (int t = 0; t < n_tiers; t++) {
        mm.tier = tiers[t];
        print_message("tier %s\n", tiers[t]->name);
        failed += cmocka_run_group_tests(tests, NULL, NULL);
    }
    return failed;
}
