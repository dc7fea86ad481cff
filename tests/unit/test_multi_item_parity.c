/*
 * test_multi_item_parity.c — every multi-item algorithm against serial, plain
 * and delimited. Runs on the demo model (tiny-qwen3) from the build tree.
 *
 * The shapes are chosen for the row layouts they produce, not for bulk: the
 * LM head of the demo model's 151,936-entry vocabulary dominates a scored
 * item's cost, so every item here is there for a layout it adds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "score_fixture.h"

static void check_against_serial(lms_engine *e, const lms_score_request *req, const char *what)
{
    lms_score_result ser = fixture_score(e, req, LMS_ALGO_SERIAL);
    assert_non_null(ser.scores);
    size_t n_multi;
    const lms_algorithm *multi = fixture_multi_algorithms(&n_multi);
    size_t n = (size_t)req->n_items * req->n_labels;
    for (size_t a = 0; a < n_multi; a++) {
        lms_score_result r = fixture_score(e, req, multi[a]);
        assert_non_null(r.scores);
        assert_int_equal(r.algorithm, multi[a]);
        double ds = fixture_max_diff(ser.scores, r.scores, n);
        double dl = fixture_max_diff(ser.logprobs, r.logprobs, n);
        if (ds > 1e-5 || dl > 1e-4)
            fail_msg("%s, %s: max |dscore| %.3g, max |dlogprob| %.3g", what,
                     lms_algorithm_name(multi[a]), ds, dl);
        lms_score_result_free(&r);
    }
    lms_score_result_free(&ser);
}

/* Attention blocks are at least 128 rows (attn_block_rows). The shapes give:
 * a one-token query; empty items (scored at the query's last row); the
 * softmax over labels; short items grouped into more than one block; a query
 * longer than a block (the prefix in two blocks, and serial sequences cut
 * into pieces); a medium query whose items fill about one block. */
static void test_algorithms_match_serial(void **state)
{
    (void)state;
    lms_engine *e = fixture_open(NULL);
    assert_non_null(e);
    const int32_t shapes[][4] = {/* q, n, min len, max len */
                                 {1, 1, 1, 5},     {7, 3, 0, 4},    {37, 20, 0, 50},
                                 {120, 64, 0, 12}, {500, 8, 1, 50}, {300, 12, 0, 30}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        fixture_request f =
            fixture_request_make(1000 + s, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
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
    fixture_request f = fixture_request_make(77, 60, 16, 0, 25);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_algorithms_match_serial),
        cmocka_unit_test(test_delimited_matches_serial),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
