/*
 * test_precision.c — the precisions end to end on the demo models: what
 * auto picks and says, the accuracy of bf16 and int8 against f32 arithmetic
 * on the same stored weights (the gates of docs/engine.md), empty items and
 * item_first in each precision, and the AVX2 kernels giving the AVX-512
 * ones' bits. Multi-item parity and isolation per precision are the
 * multi-item programs, run again by CTest (tests/CMakeLists.txt).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "cpu.h"
#include "score_fixture.h"

static lms_engine *open_model(const char *model, lms_precision precision, bool avx2_only)
{
    const char *dir = getenv("LMSCORE_BUILD_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", dir ? dir : "build", model);
    lms_engine_options o = fixture_options();
    o.precision = precision;
    o.avx2_only = avx2_only;
    lms_engine *e = NULL;
    lms_error err = {0};
    if (lms_engine_open(path, &o, &e, &err) != LMS_OK) fail_msg("%s: %s", path, err.msg);
    return e;
}

/* auto keeps each stored type; the info says what and why. */
static void test_auto_keeps_the_stored_precision(void **state)
{
    (void)state;
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    const struct {
        const char *model, *precision, *weights;
    } cases[] = {
        {"tiny-qwen3.gguf", "f32", "f32"},
        {"tiny-qwen3-bf16.gguf", "bf16", "bf16"},
        {"tiny-qwen3-q8_0.gguf", "int8", "q8"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        lms_engine *e = open_model(cases[i].model, LMS_PRECISION_AUTO, false);
        lms_model_info mi;
        lms_engine_model_info(e, &mi);
        const bool low = strcmp(cases[i].precision, "f32") != 0;
        assert_string_equal(mi.precision, low && !cpu.avx2 ? "f32" : cases[i].precision);
        assert_non_null(strstr(mi.precision_reason, "auto"));
        if (cpu.avx2) assert_non_null(strstr(mi.weights, cases[i].weights));
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

/* A request of 120 items (some empty), scored as asked by the flags. */
static fixture_request accuracy_request(bool item_first)
{
    fixture_request f = fixture_request_make(21, 40, 120, 0, 12);
    f.req.item_first = item_first;
    return f;
}

/* bf16 on 16-bit weights and int8 on Q8_0 weights against f32 arithmetic
 * on the same weights, items first or last: within the gates. */
static void test_accuracy_gates(void **state)
{
    (void)state;
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    if (!cpu.avx2) skip();
    const struct {
        const char *model;
        lms_precision precision;
        double max, mean;
    } gates[] = {
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16, 0.02, 0.01},
        {"tiny-qwen3-q8_0.gguf", LMS_PRECISION_INT8, INFINITY, 0.02},
    };
    for (size_t g = 0; g < sizeof gates / sizeof *gates; g++) {
        lms_engine *f32 = open_model(gates[g].model, LMS_PRECISION_F32, false);
        lms_engine *low = open_model(gates[g].model, gates[g].precision, false);
        for (int item_first = 0; item_first < 2; item_first++) {
            fixture_request f = accuracy_request(item_first);
            lms_score_result a = fixture_score(f32, &f.req, LMS_ALGO_AUTO);
            lms_score_result b = fixture_score(low, &f.req, LMS_ALGO_AUTO);
            assert_non_null(a.scores);
            assert_non_null(b.scores);
            const diff d = compare(&a, &b);
            print_message("%s, %s%s: max |dlogprob| %.3g, mean %.3g\n", gates[g].model,
                          lms_precision_name(gates[g].precision), item_first ? ", item_first" : "",
                          d.max, d.mean);
            if (d.max > gates[g].max || d.mean > gates[g].mean)
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

/* The AVX2 kernels give the AVX-512 kernels' bits, request for request. */
static void test_avx2_tier_gives_the_same_bits(void **state)
{
    (void)state;
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    if (!cpu.avx512) skip();
    const struct {
        const char *model;
        lms_precision precision;
    } cases[] = {
        {"tiny-qwen3-bf16.gguf", LMS_PRECISION_BF16},
        {"tiny-qwen3-q8_0.gguf", LMS_PRECISION_INT8},
        {"tiny-qwen3.gguf", LMS_PRECISION_F32},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lms_engine *fast = open_model(cases[c].model, cases[c].precision, false);
        lms_engine *avx2 = open_model(cases[c].model, cases[c].precision, true);
        fixture_request f = accuracy_request(false);
        lms_score_result a = fixture_score(fast, &f.req, LMS_ALGO_AUTO);
        lms_score_result b = fixture_score(avx2, &f.req, LMS_ALGO_AUTO);
        const size_t n = (size_t)a.n_items * a.n_labels;
        if (memcmp(a.logprobs, b.logprobs, n * sizeof *a.logprobs))
            fail_msg("%s %s: the AVX2 kernels differ", cases[c].model,
                     lms_precision_name(cases[c].precision));
        lms_score_result_free(&a);
        lms_score_result_free(&b);
        fixture_request_free(&f);
        lms_engine_close(fast);
        lms_engine_close(avx2);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_keeps_the_stored_precision),
        cmocka_unit_test(test_accuracy_gates),
        cmocka_unit_test(test_avx2_tier_gives_the_same_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
