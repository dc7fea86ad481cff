/*
 * test_precision.c — the precisions end to end on the demo models, on one
 * compute tier (LMSCORE_TEST_ISA, tier_fixture.h; CTest runs it once per
 * tier): what auto picks and says, the accuracy of bf16 and int8 against
 * f32 arithmetic on the same stored weights (the gates of docs/engine.md),
 * empty items and item_first in each precision, and the tier giving every
 * other tier's bits (within the bf16 gates where one of the two rounds the
 * 16-bit projections' activations to bf16). Multi-item parity and isolation per precision are the
 * multi-item programs, run again by CTest (tests/CMakeLists.txt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "case_fixture.h"
#include "score_fixture.h"
#include "tier_fixture.h"

/* The tier under test (main). */
static const compute_tier *tier;

/* Does tier t multiply in this precision? */
static bool tier_has(const compute_tier *t, lms_precision precision)
{
    return precision == LMS_PRECISION_F32 ||
           compute_tier_multiplies(t, precision == LMS_PRECISION_INT8 ||
                                              precision == LMS_PRECISION_INT8X2
                                          ? LMS_WEIGHTS_Q8
                                          : LMS_WEIGHTS_BF16);
}

static lms_status open_with_kv(const char *model, lms_precision precision, const char *isa,
                               lms_kv_dtype kv, lms_engine **e, lms_error *err)
{
    const char *dir = getenv("LMSCORE_BUILD_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", dir ? dir : "build", model);
    lms_engine_options o = fixture_options();
    o.precision = precision;
    o.isa = isa;
    o.kv_dtype = kv;
    return lms_engine_open(path, &o, e, err);
}

static lms_engine *open_model(const char *model, lms_precision precision, const char *isa)
{
    lms_engine *e = NULL;
    lms_error err = {0};
    if (open_with_kv(model, precision, isa, LMS_KV_DTYPE_AUTO, &e, &err) != LMS_OK)
        fail_msg("%s: %s", model, err.msg);
    return e;
}

/* auto keeps each stored type; the info says what and why. */
static void test_auto_keeps_the_stored_precision(void **state)
{
    (void)state;
    const struct {
        const char *model, *precision, *weights;
    } cases[] = {
        {"tiny-qwen3.gguf", "f32", "f32"},
        {"tiny-qwen3-bf16.gguf", "bf16", "bf16"},
        {"tiny-qwen3-q8_0.gguf", "int8", "q8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lms_engine *e = open_model(cases[i].model, LMS_PRECISION_AUTO, tier->name);
        lms_model_info mi;
        lms_engine_model_info(e, &mi);
        const bool low = strcmp(cases[i].precision, "f32") != 0;
        const bool kept = !low || compute_tier_multiplies(tier, LMS_WEIGHTS_Q8);
        assert_string_equal(mi.isa, tier->name);
        assert_string_equal(mi.precision, kept ? cases[i].precision : "f32");
        assert_non_null(strstr(mi.precision_reason, "auto"));
        assert_non_null(strstr(mi.weights, kept ? cases[i].weights : "f32"));
        assert_true(mi.weight_bytes > 0 && mi.parameters > 0);
        print_message("%s: %s (%s), weights %s, kernels %s, %.3f bytes/parameter\n", cases[i].model,
                      mi.precision, mi.precision_reason, mi.weights, mi.kernels,
                      (double)mi.weight_bytes / (double)mi.parameters);
        lms_engine_close(e);
    }
}

typedef struct {
    double max, mean;
} diff;

static diff compare(const lms_score_result *a, const lms_score_result *b)
{
    const size_t n = (size_t)a->n_items * a->n_labels;
    diff d = {0, 0};
    for (size_t i = 0; i < n; i++) {
        const double x = fabs((double)a->logprobs[i] - (double)b->logprobs[i]);
        d.max = x > d.max || x != x ? (x != x ? INFINITY : x) : d.max;
        d.mean += x / (double)n;
    }
    return d;
}

/* The API's scores from b against a's: raw (exp of the log-prob) and with
 * softmax over the labels, the largest and mean |difference| of each, and
 * the smallest Spearman correlation, over the labels, of the items'
 * rankings by log-prob. */
typedef struct {
    double raw_max, raw_mean, softmax_max, softmax_mean, spearman;
} score_diff;

static const float *ranked_values;

static int by_value(const void *x, const void *y)
{
    const float u = ranked_values[*(const int32_t *)x], v = ranked_values[*(const int32_t *)y];
    return u < v ? -1 : u > v;
}

/* rank[i]: item i's place among v[0 .. n) (v's stride: stride). */
static void rank_items(const float *v, int32_t n, int32_t stride, double *rank)
{
    int32_t *order = malloc((size_t)n * sizeof *order);
    float *column = malloc((size_t)n * sizeof *column);
    assert_non_null(order);
    assert_non_null(column);
    for (int32_t i = 0; i < n; i++) {
        order[i] = i;
        column[i] = v[(size_t)i * stride];
    }
    ranked_values = column;
    qsort(order, (size_t)n, sizeof *order, by_value);
    for (int32_t i = 0; i < n; i++)
        rank[order[i]] = i;
    free(order);
    free(column);
}

static score_diff compare_scores(const lms_score_result *a, const lms_score_result *b)
{
    const int32_t n = a->n_items, labels = a->n_labels;
    score_diff d = {0, 0, 0, 0, 1};
    for (int32_t i = 0; i < n; i++) {
        double za = 0, zb = 0;
        for (int32_t j = 0; j < labels; j++) {
            za += exp(a->logprobs[i * labels + j]);
            zb += exp(b->logprobs[i * labels + j]);
        }
        for (int32_t j = 0; j < labels; j++) {
            const double ea = exp(a->logprobs[i * labels + j]),
                         eb = exp(b->logprobs[i * labels + j]);
            const double raw = fabs(ea - eb), soft = fabs(ea / za - eb / zb);
            d.raw_max = raw > d.raw_max || raw != raw ? raw : d.raw_max;
            d.softmax_max = soft > d.softmax_max || soft != soft ? soft : d.softmax_max;
            d.raw_mean += raw / ((double)n * labels);
            d.softmax_mean += soft / ((double)n * labels);
        }
    }
    double *ra = malloc((size_t)n * sizeof *ra), *rb = malloc((size_t)n * sizeof *rb);
    assert_non_null(ra);
    assert_non_null(rb);
    for (int32_t j = 0; j < labels; j++) {
        rank_items(a->logprobs + j, n, labels, ra);
        rank_items(b->logprobs + j, n, labels, rb);
        double sq = 0;
        for (int32_t i = 0; i < n; i++)
            sq += (ra[i] - rb[i]) * (ra[i] - rb[i]);
        const double rho = 1 - 6 * sq / ((double)n * ((double)n * n - 1));
        if (rho < d.spearman) d.spearman = rho;
    }
    free(ra);
    free(rb);
    return d;
}

/* A request of 120 items (some empty), scored as asked by the flags. */
static fixture_request accuracy_request(bool item_first)
{
    fixture_request f = fixture_request_make(21, 40, 120, 0, 12);
    f.req.item_first = item_first;
    return f;
}

/* bf16 and bf16x2 on 16-bit weights and int8 and int8x2 on Q8_0 weights
 * against f32 arithmetic on the same weights, items first or last: within
 * the gates (docs/engine.md). The exact modes (bf16x2, int8x2) and int8 are
 * held on log-probs; bf16, which rounds activations to bf16 once where the
 * tier's instruction takes bf16, on the API's scores (the seeds' gates:
 * max 0.02, mean 0.01, raw and with softmax over the labels) and on every
 * label's ranking of the items (Spearman ≥ 0.995). */
static void test_accuracy_gates(void **state)
{
    (void)state;
    if (!tier_has(tier, LMS_PRECISION_BF16)) fixture_skip("this tier has no 16-bit kernels");
    const struct {
        const char *model;
        lms_precision precision;
        double max, mean; /* log-probs; 0: the score gates */
    } gates[] = {
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16, 0, 0},
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16X2, 0.02, 0.01},
        /* f16 weights keep their bits: held as bf16 with x rounded once
         * they fail these gates (softmax max 0.03 on this model) */
        {"tiny-qwen3-f16.gguf", LMS_PRECISION_BF16, 0, 0},
        {"tiny-qwen3-f16.gguf", LMS_PRECISION_BF16X2, 0.02, 0.01},
        {"tiny-qwen3-q8_0.gguf", LMS_PRECISION_INT8, 0.4, 0.1},
        {"tiny-qwen3-q8_0.gguf", LMS_PRECISION_INT8X2, 0.02, 0.02},
    };
    for (size_t g = 0; g < sizeof gates / sizeof *gates; g++) {
        lms_engine *f32 = open_model(gates[g].model, LMS_PRECISION_F32, tier->name);
        lms_engine *low = open_model(gates[g].model, gates[g].precision, tier->name);
        for (int item_first = 0; item_first < 2; item_first++) {
            fixture_request f = accuracy_request(item_first);
            lms_score_result a = fixture_score(f32, &f.req, LMS_ALGO_AUTO);
            lms_score_result b = fixture_score(low, &f.req, LMS_ALGO_AUTO);
            assert_non_null(a.scores);
            assert_non_null(b.scores);
            const diff d = compare(&a, &b);
            const score_diff sd = compare_scores(&a, &b);
            print_message("%s, %s%s: max |dlogprob| %.3g, mean %.3g; scores max %.3g, mean %.3g; "
                          "with softmax max %.3g, mean %.3g; Spearman %.5f\n",
                          gates[g].model, lms_precision_name(gates[g].precision),
                          item_first ? ", item_first" : "", d.max, d.mean, sd.raw_max, sd.raw_mean,
                          sd.softmax_max, sd.softmax_mean, sd.spearman);
            if (!gates[g].max &&
                (sd.raw_max > 0.02 || sd.raw_mean > 0.01 || sd.softmax_max > 0.02 ||
                 sd.softmax_mean > 0.01 || !(sd.spearman >= 0.995)))
                fail_msg("%s %s: scores max %.3g, mean %.3g, with softmax max %.3g, mean %.3g "
                         "(gates 0.02, 0.01), Spearman %.5f (gate 0.995)",
                         gates[g].model, lms_precision_name(gates[g].precision), sd.raw_max,
                         sd.raw_mean, sd.softmax_max, sd.softmax_mean, sd.spearman);
            if (gates[g].max && (d.max > gates[g].max || d.mean > gates[g].mean))
                fail_msg("%s %s: max %.3g (gate %.3g), mean %.3g (gate %.3g)", gates[g].model,
                         lms_precision_name(gates[g].precision), d.max, gates[g].max, d.mean,
                         gates[g].mean);
            lms_score_result_free(&a);
            lms_score_result_free(&b);
            fixture_request_free(&f);
        }
        lms_engine_close(f32);
        lms_engine_close(low);
    }
}

/* kv_dtype: auto holds keys and values in f16 where the projections are not
 * all f32; f32 keeps them exact, so that bf16x2 on bf16 weights gives f32's
 * bits (on a tier with bf16 activations: within its gates); f16 rounds them
 * in f32 too; a tier without 16-bit kernels refuses f16 at open. */
static void test_kv_dtype(void **state)
{
    (void)state;
    lms_engine *e = NULL;
    lms_error err = {0};
    lms_model_info mi;
    if (!tier->kernels->w16) {
        assert_int_equal(open_with_kv("tiny-qwen3.gguf", LMS_PRECISION_F32, tier->name,
                                      LMS_KV_DTYPE_F16, &e, &err),
                         LMS_ERR_INVALID_ARGUMENT);
        assert_null(e);
        assert_string_equal(err.field, "kv_dtype");
        e = open_model("tiny-qwen3-bf16.gguf", LMS_PRECISION_AUTO, tier->name);
        lms_engine_model_info(e, &mi);
        assert_string_equal(mi.kv_dtype, "f32");
        lms_engine_close(e);
        return;
    }
    const struct {
        lms_precision precision;
        lms_kv_dtype kv;
        const char *held;
    } runs[] = {
        {LMS_PRECISION_F32, LMS_KV_DTYPE_AUTO, "f32"},
        {LMS_PRECISION_BF16X2, LMS_KV_DTYPE_AUTO, "f16"},
        {LMS_PRECISION_BF16X2, LMS_KV_DTYPE_F32, "f32"},
        {LMS_PRECISION_F32, LMS_KV_DTYPE_F16, "f16"},
    };
    enum { N_RUNS = sizeof runs / sizeof *runs };
    lms_score_result r[N_RUNS];
    fixture_request f = accuracy_request(false);
    for (size_t i = 0; i < N_RUNS; i++) {
        if (open_with_kv("tiny-qwen3-bf16.gguf", runs[i].precision, tier->name, runs[i].kv, &e,
                         &err) != LMS_OK)
            fail_msg("%s", err.msg);
        lms_engine_model_info(e, &mi);
        assert_string_equal(mi.kv_dtype, runs[i].held);
        r[i] = fixture_score(e, &f.req, LMS_ALGO_AUTO);
        assert_non_null(r[i].logprobs);
        lms_engine_close(e);
    }
    const diff f16_keys = compare(&r[0], &r[1]), f32_keys = compare(&r[0], &r[2]),
               f32_f16_keys = compare(&r[0], &r[3]);
    print_message("bf16x2 against f32 on bf16 weights: f16 keys max %.3g mean %.3g, f32 keys max "
                  "%.3g mean %.3g; f32 with f16 keys: max %.3g mean %.3g\n",
                  f16_keys.max, f16_keys.mean, f32_keys.max, f32_keys.mean, f32_f16_keys.max,
                  f32_f16_keys.mean);
    /* f16 keys move the numbers; with f32 keys, a tier whose 16-bit
     * projections take f32 activations computes f32's sequence on the same
     * values (kernels.h): f32's bits */
    assert_true(f32_f16_keys.max > 0 && f32_f16_keys.max <= 0.02 && f16_keys.max > 0);
    if (tier->bf16_activations == KERNEL_BF16_F32)
        assert_memory_equal(r[0].logprobs, r[2].logprobs,
                            (size_t)r[0].n_items * r[0].n_labels * sizeof *r[0].logprobs);
    else
        assert_true(f32_keys.max <= 0.02 && f32_keys.mean <= 0.01);
    for (size_t i = 0; i < N_RUNS; i++)
        lms_score_result_free(&r[i]);
    fixture_request_free(&f);
}

/* Do tiers a and b compute bf16 projections in different sequences
 * (kernels.h): one of them rounds x to bf16, or they step with different
 * instructions (tdpbf16ps, vdpbf16ps)? */
static bool sequences_differ(const compute_tier *a, const compute_tier *b, lms_precision precision)
{
    return (precision == LMS_PRECISION_BF16 || precision == LMS_PRECISION_BF16X2) &&
           a->bf16_activations != b->bf16_activations;
}

/* The tier under test gives every other tier's bits, request for request,
 * in each precision both run with the same sequence of operations; where
 * one rounds the activations of 16-bit projections to bf16, it is within
 * the precision's gates of the other (printed): bf16x2's on log-probs,
 * bf16's on the scores and rankings (test_accuracy_gates). */
static void test_tiers_give_the_same_bits(void **state)
{
    (void)state;
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    const struct {
        const char *model;
        lms_precision precision;
    } cases[] = {
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16},
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16X2},
        {"tiny-qwen3-q8_0.gguf", LMS_PRECISION_INT8},
        {"tiny-qwen3-q4_0.gguf", LMS_PRECISION_INT8}, /* codes + 8: tdpbsud on the amx tiers */
        {"tiny-qwen3.gguf", LMS_PRECISION_F32},
    };
    int compared = 0;
    for (const compute_tier *const *other = compute_tiers; *other; other++) {
        char why[200];
        if (*other == tier || !compute_tier_offered(*other, &cpu, why, sizeof why)) continue;
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            if (!tier_has(tier, cases[c].precision) || !tier_has(*other, cases[c].precision))
                continue;
            lms_engine *a_engine = open_model(cases[c].model, cases[c].precision, tier->name);
            lms_engine *b_engine = open_model(cases[c].model, cases[c].precision, (*other)->name);
            fixture_request f = accuracy_request(false);
            lms_score_result a = fixture_score(a_engine, &f.req, LMS_ALGO_AUTO);
            lms_score_result b = fixture_score(b_engine, &f.req, LMS_ALGO_AUTO);
            const size_t n = (size_t)a.n_items * a.n_labels;
            if (sequences_differ(tier, *other, cases[c].precision)) {
                const diff d = compare(&a, &b);
                const score_diff sd = compare_scores(&a, &b);
                print_message("%s %s, %s against %s: max |dlogprob| %.3g, mean %.3g; with "
                              "softmax max %.3g, mean %.3g; Spearman %.5f\n",
                              cases[c].model, lms_precision_name(cases[c].precision), tier->name,
                              (*other)->name, d.max, d.mean, sd.softmax_max, sd.softmax_mean,
                              sd.spearman);
                if (cases[c].precision == LMS_PRECISION_BF16 &&
                    (sd.raw_max > 0.02 || sd.softmax_max > 0.02 || sd.softmax_mean > 0.01 ||
                     !(sd.spearman >= 0.995)))
                    fail_msg("%s: the %s tier's scores are off the %s tier's by max %.3g, with "
                             "softmax max %.3g, mean %.3g (gates 0.02, 0.01), Spearman %.5f",
                             cases[c].model, tier->name, (*other)->name, sd.raw_max, sd.softmax_max,
                             sd.softmax_mean, sd.spearman);
                if (cases[c].precision == LMS_PRECISION_BF16X2 && (d.max > 0.02 || d.mean > 0.01))
                    fail_msg("%s: the %s tier is off the %s tier's result by max %.3g (gate "
                             "0.02), mean %.3g (gate 0.01)",
                             cases[c].model, tier->name, (*other)->name, d.max, d.mean);
            } else if (memcmp(a.logprobs, b.logprobs, n * sizeof *a.logprobs))
                fail_msg("%s %s: the %s tier differs from the %s tier", cases[c].model,
                         lms_precision_name(cases[c].precision), tier->name, (*other)->name);
            compared++;
            lms_score_result_free(&a);
            lms_score_result_free(&b);
            fixture_request_free(&f);
            lms_engine_close(a_engine);
            lms_engine_close(b_engine);
        }
    }
    if (!compared) fixture_skip("no other tier runs on this CPU");
}

int main(int argc, char **argv)
{
    const compute_tier *found[FIXTURE_MAX_TIERS];
    if (fixture_tiers(found) != 1) {
        fprintf(stderr, "test_precision runs on one tier: set LMSCORE_TEST_ISA (%s)\n",
                lms_isa_names());
        return 2;
    }
    tier = found[0];
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_keeps_the_stored_precision),
        cmocka_unit_test(test_kv_dtype),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_accuracy_gates),
        cmocka_unit_test(test_tiers_give_the_same_bits),
    };
    return fixture_run(argc, argv, tests, alone);
}
