/*
 * test_multi_item_batches.c — how the multi-item algorithms batch: the same
 * call twice gives the same bits, packs of any budget give the numbers of one
 * big pack, and a repeated query comes from the prefix cache. Runs on the
 * demo model (tiny-qwen3) from the build tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "score_fixture.h"

static int count_batch(void *ctx, int32_t first, int32_t n, const float *scores,
                       const float *logprobs)
{
    (void)first, (void)n, (void)scores, (void)logprobs;
    ++*(int *)ctx;
    return 0;
}

/* Scores req with algo; *batches gets the number of forward passes that
 * finished items. */
static lms_score_result score_counting(lms_engine *e, const lms_score_request *req,
                                       lms_algorithm algo, int *batches)
{
    lms_score_request r = *req;
    r.algorithm = algo;
    *batches = 0;
    const lms_score_hooks hooks = {.on_items = count_batch, .ctx = batches};
    lms_score_result res;
    lms_error err = {0};
    if (lms_engine_score(e, &r, &hooks, &res, &err) != LMS_OK)
        fail_msg("%s failed: %s", lms_algorithm_name(algo), err.msg);
    return res;
}

/* A 64-token budget against a 45-token query: a few items per pack or extend
 * batch, so 48 items take at least three of each. */
static void test_deterministic_and_chunked(void **state)
{
    (void)state;
    lms_engine_options small;
    lms_engine_options_default(&small);
    small.max_packed_tokens = 64;
    small.prefix_cache_bytes = 0;
    lms_engine *e = fixture_open(&small);
    lms_engine *big = fixture_open(NULL);
    assert_non_null(e);
    assert_non_null(big);
    const int32_t n_items = 48;
    fixture_request f = fixture_request_make(9, 45, n_items, 0, 6);
    const size_t n = (size_t)n_items * 4;
    size_t n_multi;
    const lms_algorithm *multi = fixture_multi_algorithms(&n_multi);
    for (size_t a = 0; a < n_multi; a++) {
        int batches;
        lms_score_result r1 = score_counting(e, &f.req, multi[a], &batches);
        if (batches < 3) fail_msg("%s: %d batches", lms_algorithm_name(multi[a]), batches);
        lms_score_result r2 = fixture_score(e, &f.req, multi[a]);
        lms_score_result r3 = fixture_score(big, &f.req, multi[a]);
        assert_non_null(r1.scores);
        assert_non_null(r2.scores);
        assert_non_null(r3.scores);
        assert_memory_equal(r1.logprobs, r2.logprobs, n * sizeof(float));
        assert_true(fixture_max_diff(r1.scores, r3.scores, n) <= 1e-5);
        lms_score_result_free(&r1);
        lms_score_result_free(&r2);
        lms_score_result_free(&r3);
    }
    fixture_request_free(&f);
    lms_engine_close(e);
    lms_engine_close(big);
}

static void test_prefix_cache_reuses_the_query(void **state)
{
    (void)state;
    lms_engine *e = fixture_open(NULL);
    assert_non_null(e);
    fixture_request f = fixture_request_make(11, 200, 10, 1, 10);
    lms_score_result cold = fixture_score(e, &f.req, LMS_ALGO_PREFILL_EXTEND);
    lms_score_result warm = fixture_score(e, &f.req, LMS_ALGO_PREFILL_EXTEND);
    assert_int_equal(cold.cached_tokens, 0);
    assert_int_equal(warm.cached_tokens, 200);
    assert_true(warm.computed_tokens < cold.computed_tokens);
    assert_memory_equal(cold.logprobs, warm.logprobs, 10 * 4 * sizeof(float));
    lms_score_result_free(&cold);
    lms_score_result_free(&warm);
    fixture_request_free(&f);
    lms_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deterministic_and_chunked),
        cmocka_unit_test(test_prefix_cache_reuses_the_query),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
