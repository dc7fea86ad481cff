/*
 * test_multi_item_memory.c — a pack whose T×T float mask would take over
 * 1 GiB runs in O(T) memory, in both algorithms that avoid the mask. Runs
 * on the demo model (tiny-qwen3) from the build tree.
 *
 * Items of 20 to 780 tokens: short ones grouped into attention blocks, long
 * ones cut into pieces, so both kinds of block run at this size. A few long
 * items rather than many short ones reach the size, and a short query, as
 * every item costs an LM-head row over the whole vocabulary and every row a
 * softmax over the query's keys.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "alloc.h"
#include "score_fixture.h"

/* Engine bytes (peak over the call) to score req with algo. */
static double peak_bytes(lms_engine *e, const lms_score_request *req, lms_algorithm algo)
{
    size_t before = lms_alloc_current_bytes();
    lms_alloc_reset_peak();
    lms_score_result r = fixture_score(e, req, algo);
    assert_non_null(r.scores);
    lms_score_result_free(&r);
    return (double)(lms_alloc_peak_bytes() - before);
}

static double rows_of(const lms_score_request *req)
{
    double rows = req->query.len;
    for (int32_t i = 0; i < req->n_items; i++)
        rows += req->items[i].len;
    return rows;
}

/* Far below T² floats, and bytes grow at most in proportion to the rows
 * (the same seed: the smaller request is the first half of the items). */
static void test_segment_memory_is_linear(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.max_packed_tokens = 24000;
    opt.prefix_cache_bytes = 0;
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request full = fixture_request_make(5, 200, 40, 20, 780);
    fixture_request half = fixture_request_make(5, 200, 20, 20, 780);
    const double t = rows_of(&full.req), t_half = rows_of(&half.req);
    const double t2_bytes = t * t * sizeof(float);
    assert_true(t2_bytes > 1024.0 * 1024 * 1024);
    assert_true(t <= opt.max_packed_tokens); /* one pack */
    const lms_algorithm algos[] = {LMS_ALGO_PACKED_SEGMENT, LMS_ALGO_PREFILL_EXTEND};
    for (int a = 0; a < 2; a++) {
        double used = peak_bytes(e, &full.req, algos[a]);
        double used_half = peak_bytes(e, &half.req, algos[a]);
        if (used > t2_bytes / 8 || used > 1.1 * (t / t_half) * used_half)
            fail_msg("%s: %.0f MiB for %.0f rows, %.0f MiB for %.0f", lms_algorithm_name(algos[a]),
                     used / 1048576, t, used_half / 1048576, t_half);
    }
    fixture_request_free(&full);
    fixture_request_free(&half);
    lms_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_segment_memory_is_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
