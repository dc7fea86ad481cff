/*
 * test_multi_item.c — every multi-item algorithm against serial, exact
 * isolation, determinism, chunking, the prefix cache and O(T) memory.
 * Runs on the demo model (tiny-qwen3) from the build tree.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "alloc.h"
#include "score_fixture.h"

static const lms_algorithm MULTI[] = {LMS_ALGO_PACKED_DENSE, LMS_ALGO_PACKED_SEGMENT,
                                      LMS_ALGO_PREFILL_EXTEND};

static void check_against_serial(lms_engine *e, const lms_score_request *req, const char *what)
{
    lms_score_result ser = fixture_score(e, req, LMS_ALGO_SERIAL);
    assert_non_null(ser.scores);
    size_t n = (size_t)req->n_items * req->n_labels;
    for (size_t a = 0; a < sizeof MULTI / sizeof *MULTI; a++) {
        lms_score_result r = fixture_score(e, req, MULTI[a]);
        assert_non_null(r.scores);
        assert_int_equal(r.algorithm, MULTI[a]);
        double ds = fixture_max_diff(ser.scores, r.scores, n);
        double dl = fixture_max_diff(ser.logprobs, r.logprobs, n);
        if (ds > 1e-5 || dl > 1e-4)
            fail_msg("%s, %s: max |dscore| %.3g, max |dlogprob| %.3g", what,
                     lms_algorithm_name(MULTI[a]), ds, dl);
        lms_score_result_free(&r);
    }
    lms_score_result_free(&ser);
}

/* Requests of 1..200 items, item lengths 0..50, queries 1..500 tokens. */
static void test_algorithms_match_serial(void **state)
{
    (void)state;
    lms_engine *e = fixture_open(NULL);
    assert_non_null(e);
    const int32_t shapes[][4] = {/* q, n, min len, max len */
                                 {1, 1, 1, 5},      {7, 3, 0, 4},     {37, 20, 0, 50},
                                 {120, 200, 0, 12}, {500, 16, 1, 50}, {300, 60, 0, 30}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        fixture_request f;
        fixture_request_make(&f, 1000 + s, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
        char what[64];
        snprintf(what, sizeof what, "Q=%d N=%d", shapes[s][0], shapes[s][1]);
        f.req.apply_softmax = s == 2; /* softmax over labels is checked once */
        check_against_serial(e, &f.req, what);
        fixture_request_free(&f);
    }
    lms_engine_close(e);
}

/* Delimited mode: the packed algorithms against serial on query <d> item. */
static void test_delimited_matches_serial(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.delimiter = 42;
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f;
    fixture_request_make(&f, 77, 60, 40, 0, 25);
    check_against_serial(e, &f.req, "delimited");

    /* and serial in delimited mode is serial on the explicit sequence */
    lms_engine *plain = fixture_open(NULL);
    assert_non_null(plain);
    int32_t *q = malloc((size_t)(f.req.query.len + 1) * sizeof *q);
    memcpy(q, f.req.query.ids, (size_t)f.req.query.len * sizeof *q);
    q[f.req.query.len] = 42;
    lms_score_request explicit_req = f.req;
    explicit_req.query.ids = q;
    explicit_req.query.len++;
    lms_score_result a = fixture_score(e, &f.req, LMS_ALGO_PACKED_SEGMENT);
    lms_score_result b = fixture_score(plain, &explicit_req, LMS_ALGO_SERIAL);
    assert_true(fixture_max_diff(a.scores, b.scores, (size_t)f.req.n_items * 4) <= 1e-5);
    lms_score_result_free(&a);
    lms_score_result_free(&b);
    free(q);
    lms_engine_close(plain);
    fixture_request_free(&f);
    lms_engine_close(e);
}

/* Changing one item never changes another item's numbers, to the bit. */
static void test_isolation_is_exact(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.max_packed_tokens = 256; /* several packs: items move between packs */
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f;
    fixture_request_make(&f, 5, 33, 30, 0, 20);
    const int32_t victim = 7;
    for (size_t a = 0; a < sizeof MULTI / sizeof *MULTI + 1; a++) {
        lms_algorithm algo = a < 3 ? MULTI[a] : LMS_ALGO_SERIAL;
        lms_score_result base = fixture_score(e, &f.req, algo);
        assert_non_null(base.scores);
        for (int mode = 0; mode < 3; mode++) {
            /* 0: same length new tokens; 1: longer; 2: shorter (maybe empty) */
            int32_t old_len = f.items[victim].len;
            int32_t *old = f.item_ids[victim];
            int32_t new_len = mode == 0 ? old_len : mode == 1 ? old_len + 13 : old_len / 3;
            int32_t *ids = malloc((size_t)(new_len + 1) * sizeof *ids);
            for (int32_t k = 0; k < new_len; k++)
                ids[k] = 5000 + 17 * k + mode;
            f.items[victim].ids = ids;
            f.items[victim].len = new_len;
            lms_score_result r = fixture_score(e, &f.req, algo);
            assert_non_null(r.scores);
            for (int32_t i = 0; i < f.req.n_items; i++) {
                if (i == victim) continue;
                if (memcmp(base.logprobs + i * 4, r.logprobs + i * 4, 4 * sizeof(float)) ||
                    memcmp(base.scores + i * 4, r.scores + i * 4, 4 * sizeof(float)))
                    fail_msg("%s: mutation %d of item %d changed item %d (%.9g vs %.9g)",
                             lms_algorithm_name(algo), mode, victim, i, base.logprobs[i * 4],
                             r.logprobs[i * 4]);
            }
            lms_score_result_free(&r);
            free(ids);
            f.items[victim].ids = old;
            f.items[victim].len = old_len;
        }
        lms_score_result_free(&base);
    }
    fixture_request_free(&f);
    lms_engine_close(e);
}

static void test_deterministic_and_chunked(void **state)
{
    (void)state;
    lms_engine_options small;
    lms_engine_options_default(&small);
    small.max_packed_tokens = 100;
    small.prefix_cache_bytes = 0;
    lms_engine *e = fixture_open(&small);
    lms_engine *big = fixture_open(NULL);
    assert_non_null(e);
    assert_non_null(big);
    fixture_request f;
    fixture_request_make(&f, 9, 45, 500, 0, 6); /* 500 items */
    for (size_t a = 0; a < sizeof MULTI / sizeof *MULTI; a++) {
        lms_score_result r1 = fixture_score(e, &f.req, MULTI[a]);
        lms_score_result r2 = fixture_score(e, &f.req, MULTI[a]);
        lms_score_result r3 = fixture_score(big, &f.req, MULTI[a]);
        assert_non_null(r1.scores);
        assert_memory_equal(r1.logprobs, r2.logprobs, 500 * 4 * sizeof(float));
        assert_true(fixture_max_diff(r1.scores, r3.scores, 500 * 4) <= 1e-5);
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
    fixture_request f;
    fixture_request_make(&f, 11, 200, 10, 1, 10);
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

/* Engine bytes (peak over the call) to score f's request with algo. */
static double peak_bytes(lms_engine *e, const lms_score_request *req, lms_algorithm algo)
{
    size_t before = lms_alloc_current_bytes();
    lms_alloc_reset_peak();
    lms_score_result r = fixture_score(e, req, algo);
    assert_non_null(r.scores);
    lms_score_result_free(&r);
    return (double)(lms_alloc_peak_bytes() - before);
}

/* A pack whose T×T float mask would take over 1 GiB runs in O(T) memory:
 * far below T² floats, and doubling the items doubles the bytes at most. */
static void test_segment_memory_is_linear(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.max_packed_tokens = 24000;
    opt.prefix_cache_bytes = 0;
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request full, half;
    fixture_request_make(&full, 3, 1000, 400, 40, 40); /* T > 17000 rows in one pack */
    fixture_request_make(&half, 3, 1000, 200, 40, 40);
    const double t = 17000, t2_bytes = t * t * sizeof(float);
    assert_true(t2_bytes > 1024.0 * 1024 * 1024);
    const lms_algorithm algos[] = {LMS_ALGO_PACKED_SEGMENT, LMS_ALGO_PREFILL_EXTEND};
    for (int a = 0; a < 2; a++) {
        double used = peak_bytes(e, &full.req, algos[a]);
        double used_half = peak_bytes(e, &half.req, algos[a]);
        if (used > t2_bytes / 8 || used > 2.2 * used_half)
            fail_msg("%s: %.0f MiB for 400 items, %.0f MiB for 200", lms_algorithm_name(algos[a]),
                     used / 1048576, used_half / 1048576);
    }
    fixture_request_free(&full);
    fixture_request_free(&half);
    lms_engine_close(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_algorithms_match_serial),
        cmocka_unit_test(test_delimited_matches_serial),
        cmocka_unit_test(test_isolation_is_exact),
        cmocka_unit_test(test_deterministic_and_chunked),
        cmocka_unit_test(test_prefix_cache_reuses_the_query),
        cmocka_unit_test(test_segment_memory_is_linear),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
