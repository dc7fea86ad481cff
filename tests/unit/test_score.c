/*
 * test_score.c — the score contract (docs/contract.md) on the engine API:
 * result semantics (apply_softmax, empty item, item_first, empty list), every
 * validation reason with its field, streaming callbacks and cancellation;
 * a compute tier whose start-up self-check faults is dropped with why and
 * the engine opens and scores on the next.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <signal.h>

#include "score_fixture.h"

static lms_engine *engine;

static int setup(void **state)
{
    (void)state;
    engine = fixture_open(NULL);
    return engine ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    lms_engine_close(engine);
    return 0;
}

static void test_softmax_and_exp(void **state)
{
    (void)state;
    fixture_request f = fixture_request_make(21, 10, 5, 1, 6);
    lms_score_result raw = fixture_score(engine, &f.req, LMS_ALGO_SERIAL);
    f.req.apply_softmax = true;
    lms_score_result soft = fixture_score(engine, &f.req, LMS_ALGO_SERIAL);
    assert_non_null(raw.scores);
    assert_non_null(soft.scores);
    assert_memory_equal(raw.logprobs, soft.logprobs, 5 * 4 * sizeof(float));
    for (int i = 0; i < 5; i++) {
        double total = 0, z = 0;
        for (int k = 0; k < 4; k++)
            z += exp(raw.logprobs[i * 4 + k]);
        for (int k = 0; k < 4; k++) {
            float lp = raw.logprobs[i * 4 + k];
            assert_true(lp <= 0);
            assert_float_equal(raw.scores[i * 4 + k], exp(lp), 1e-7 * exp(lp) + 1e-30);
            assert_float_equal(soft.scores[i * 4 + k], exp(lp) / z, 1e-6);
            total += soft.scores[i * 4 + k];
        }
        assert_float_equal(total, 1.0, 1e-5);
    }
    lms_score_result_free(&raw);
    lms_score_result_free(&soft);
    fixture_request_free(&f);
}

/* An empty item scores at the query's last token: the same sequence as the
 * query's prefix plus its last token as the item. */
static void test_empty_item_scores_at_query_end(void **state)
{
    (void)state;
    for (int a = LMS_ALGO_SERIAL; a <= LMS_ALGO_PREFILL_EXTEND; a++) {
        fixture_request f = fixture_request_make(31, 12, 3, 0, 0);
        lms_score_result empty = fixture_score(engine, &f.req, (lms_algorithm)a);
        lms_score_request split = f.req;
        split.query.len = 11;
        lms_tokens last = {&f.query[11], 1};
        split.items = &last;
        split.n_items = 1;
        lms_score_result ref = fixture_score(engine, &split, LMS_ALGO_SERIAL);
        assert_non_null(empty.scores);
        assert_non_null(ref.scores);
        for (int i = 0; i < 3; i++)
            assert_true(fixture_max_diff(empty.logprobs + i * 4, ref.logprobs, 4) <= 1e-5);
        lms_score_result_free(&empty);
        lms_score_result_free(&ref);
        fixture_request_free(&f);
    }
}

/* item_first scores item ++ query, whatever algorithm was asked for. */
static void test_item_first(void **state)
{
    (void)state;
    fixture_request f = fixture_request_make(41, 9, 4, 0, 7);
    f.req.item_first = true;
    lms_score_result r = fixture_score(engine, &f.req, LMS_ALGO_PACKED_SEGMENT);
    assert_non_null(r.scores);
    assert_int_equal(r.algorithm, LMS_ALGO_SERIAL);
    assert_non_null(strstr(r.algorithm_reason, "item_first"));
    for (int i = 0; i < 4; i++) {
        lms_score_request swapped = f.req;
        swapped.item_first = false;
        swapped.query = f.items[i];
        lms_tokens q = {f.query, 9};
        swapped.items = &q;
        swapped.n_items = 1;
        lms_score_result ref = fixture_score(engine, &swapped, LMS_ALGO_SERIAL);
        assert_non_null(ref.scores);
        assert_true(fixture_max_diff(r.logprobs + i * 4, ref.logprobs, 4) <= 1e-5);
        lms_score_result_free(&ref);
    }
    lms_score_result_free(&r);

    /* item_first batches are sized by whole sequences, query included: sized
     * by the items alone, a batch would overrun its buffer by the query */
    lms_engine_options opt = fixture_options();
    opt.max_packed_tokens = 64;
    lms_engine *small = fixture_open(&opt);
    assert_non_null(small);
    fixture_request g = fixture_request_make(43, 30, 6, 20, 20);
    g.req.item_first = true;
    lms_score_result batched = fixture_score(small, &g.req, LMS_ALGO_AUTO);
    lms_score_result one_by_one = fixture_score(engine, &g.req, LMS_ALGO_AUTO);
    assert_non_null(batched.scores);
    assert_true(fixture_max_diff(batched.scores, one_by_one.scores, 6 * 4) <= 1e-5);
    lms_score_result_free(&batched);
    lms_score_result_free(&one_by_one);
    fixture_request_free(&g);
    lms_engine_close(small);
    fixture_request_free(&f);
}

static void test_empty_item_list(void **state)
{
    (void)state;
    fixture_request f = fixture_request_make(51, 5, 0, 0, 0);
    lms_score_result r;
    lms_error err = {0};
    assert_int_equal(lms_engine_score(engine, &f.req, NULL, &r, &err), LMS_OK);
    assert_int_equal(r.n_items, 0);
    assert_int_equal(r.computed_tokens, 0);
    lms_score_result_free(&r);
    fixture_request_free(&f);
}

static void expect_rejected(lms_engine *e, const lms_score_request *req, const char *reason,
                            const char *field)
{
    lms_score_result r;
    lms_error err = {0};
    lms_status st = lms_engine_score(e, req, NULL, &r, &err);
    if (st != LMS_ERR_INVALID_ARGUMENT || strcmp(err.reason, reason) || strcmp(err.field, field))
        fail_msg("expected %s on %s, got status %s reason '%s' field '%s': %s", reason, field,
                 lms_status_name(st), err.reason, err.field, err.msg);
    assert_null(r.scores);
}

static void test_validation_reasons(void **state)
{
    (void)state;
    fixture_request f = fixture_request_make(61, 6, 3, 2, 4);
    lms_score_request r = f.req;

    r.n_labels = 0;
    expect_rejected(engine, &r, "empty_label_token_ids", "label_token_ids");
    r = f.req;
    int32_t bad_labels[] = {5, -1};
    r.label_ids = bad_labels;
    r.n_labels = 2;
    expect_rejected(engine, &r, "negative_token_id", "label_token_ids");
    bad_labels[1] = 151936;
    expect_rejected(engine, &r, "token_id_exceeds_vocab", "label_token_ids");

    r = f.req;
    f.query[2] = -7;
    expect_rejected(engine, &r, "negative_token_id", "query");
    f.query[2] = 1 << 30;
    expect_rejected(engine, &r, "token_id_exceeds_vocab", "query");
    f.query[2] = 500;
    f.item_ids[1][0] = -2;
    expect_rejected(engine, &r, "negative_token_id", "items[1]");
    f.item_ids[1][0] = 200000;
    expect_rejected(engine, &r, "token_id_exceeds_vocab", "items[1]");
    f.item_ids[1][0] = 500;

    /* empty query and an empty item: no token to score at */
    r.query.len = 0;
    f.items[2].len = 0;
    expect_rejected(engine, &r, "empty_query", "query");
    f.items[2].len = 2;
    r.query.len = 6;

    lms_engine_options opt = fixture_options();
    opt.max_items = 2;
    opt.max_sequence_tokens = 9;
    opt.delimiter = 42;
    lms_engine *limited = fixture_open(&opt);
    assert_non_null(limited);
    expect_rejected(limited, &r, "too_many_items", "items");
    r.n_items = 2;
    f.items[0].len = 2; /* 6 + delimiter + 2 = 9: at the limit */
    f.items[1].len = 4; /* 6 + delimiter + 4 = 11 > 9 */
    expect_rejected(limited, &r, "sequence_too_long", "items[1]");
    f.items[1].len = 1;
    f.query[0] = 42;
    expect_rejected(limited, &r, "delimiter_in_content", "query");
    f.query[0] = 500;
    f.item_ids[0][1] = 42;
    expect_rejected(limited, &r, "delimiter_in_content", "items[0]");
    f.item_ids[0][1] = 500;
    r.query.len = 0;
    expect_rejected(limited, &r, "empty_query", "query");
    lms_engine_close(limited);
    fixture_request_free(&f);
}

static void test_dense_mask_guard(void **state)
{
    (void)state;
    lms_engine_options opt = fixture_options();
    opt.dense_mask_max_tokens = 64;
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f = fixture_request_make(71, 60, 2, 30, 30);
    lms_score_request r = f.req;
    r.algorithm = LMS_ALGO_PACKED_DENSE;
    lms_score_result res;
    lms_error err = {0};
    assert_int_equal(lms_engine_score(e, &r, NULL, &res, &err), LMS_ERR_RESOURCE_EXHAUSTED);
    assert_string_equal(err.reason, "dense_mask_too_large");
    lms_engine_close(e);
    fixture_request_free(&f);
}

typedef struct {
    int32_t next; /* the item index on_items expects next */
    int calls;
    int stop_after; /* should_stop says yes after this many polls (-1: never) */
    int polls;
} stream_state;

static int on_items(void *ctx, int32_t first, int32_t n, const float *scores, const float *lp)
{
    stream_state *s = ctx;
    assert_int_equal(first, s->next);
    assert_true(n > 0);
    for (int32_t i = 0; i < n * 4; i++)
        assert_float_equal(scores[i], exp(lp[i]), 1e-6);
    s->next += n;
    s->calls++;
    return 0;
}

static int should_stop(void *ctx)
{
    stream_state *s = ctx;
    return s->stop_after >= 0 && ++s->polls > s->stop_after;
}

static void test_streaming_and_cancellation(void **state)
{
    (void)state;
    lms_engine_options opt = fixture_options();
    opt.max_packed_tokens = 64; /* many batches */
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f = fixture_request_make(81, 20, 40, 0, 9);
    for (int a = LMS_ALGO_SERIAL; a <= LMS_ALGO_PREFILL_EXTEND; a++) {
        stream_state s = {0, 0, -1, 0};
        lms_score_hooks hooks = {on_items, should_stop, &s};
        lms_score_request r = f.req;
        r.algorithm = (lms_algorithm)a;
        lms_score_result res;
        lms_error err = {0};
        assert_int_equal(lms_engine_score(e, &r, &hooks, &res, &err), LMS_OK);
        assert_int_equal(s.next, 40);
        assert_true(s.calls > 1);
        lms_score_result_free(&res);

        stream_state stop = {0, 0, 5, 0};
        hooks.ctx = &stop;
        assert_int_equal(lms_engine_score(e, &r, &hooks, &res, &err), LMS_ERR_CANCELLED);
        assert_null(res.scores);
        assert_true(stop.next < 40);
    }
    lms_engine_close(e);
    fixture_request_free(&f);
}

/* A session prefills the query once; batches match a one-shot request. */
static void test_session_batches(void **state)
{
    (void)state;
    lms_engine_options opt = fixture_options();
    opt.prefix_cache_bytes = 0; /* the session's pin alone keeps the KV */
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f = fixture_request_make(91, 50, 30, 0, 8);
    lms_score_result whole = fixture_score(e, &f.req, LMS_ALGO_SERIAL);
    assert_non_null(whole.scores);
    lms_score_session *s = NULL;
    lms_error err = {0};
    assert_int_equal(lms_score_session_begin(e, &f.req, NULL, &s, &err), LMS_OK);
    for (int32_t first = 0; first < 30; first += 7) {
        int32_t n = 30 - first < 7 ? 30 - first : 7;
        lms_score_result part;
        assert_int_equal(lms_score_session_score(s, f.items + first, n, NULL, &part, &err), LMS_OK);
        assert_int_equal(part.algorithm, LMS_ALGO_PREFILL_EXTEND);
        assert_int_equal(part.cached_tokens, 50);
        assert_true(fixture_max_diff(part.scores, whole.scores + first * 4, (size_t)n * 4) <= 1e-5);
        lms_score_result_free(&part);
    }
    lms_score_session_end(s);

    /* the header is validated like a request */
    lms_score_request bad = f.req;
    bad.n_labels = 0;
    assert_int_equal(lms_score_session_begin(e, &bad, NULL, &s, &err), LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "empty_label_token_ids");
    lms_score_result_free(&whole);
    fixture_request_free(&f);
    lms_engine_close(e);
}

static int stop_now(void *ctx)
{
    int *polls = ctx;
    ++*polls;
    return 1;
}

/* A session's query is held to the sequence limit on its own (a ScoreItems
 * header has no items to measure it through), and its prefill polls the
 * caller's should_stop. */
static void test_session_query_limit_and_stop(void **state)
{
    (void)state;
    lms_engine_options opt = fixture_options();
    opt.max_sequence_tokens = 40;
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    fixture_request f = fixture_request_make(7, 41, 2, 1, 3);
    lms_score_session *s = NULL;
    lms_error err = {0};
    assert_int_equal(lms_score_session_begin(e, &f.req, NULL, &s, &err), LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "sequence_too_long");
    assert_string_equal(err.field, "query");
    assert_null(s);

    f.req.query.len = 40; /* at the limit: an empty item still fits */
    int polls = 0;
    lms_score_hooks hooks = {.should_stop = stop_now, .ctx = &polls};
    assert_int_equal(lms_score_session_begin(e, &f.req, &hooks, &s, &err), LMS_ERR_CANCELLED);
    assert_true(polls > 0);
    assert_null(s);
    assert_int_equal(lms_score_session_begin(e, &f.req, NULL, &s, &err), LMS_OK);
    lms_score_session_end(s);
    fixture_request_free(&f);
    lms_engine_close(e);
}

/* A SIGSEGV in avx512-bf16's self-check (the hook takes the CPU for one
 * with AVX-512 BF16, on any CPU): the tier is dropped, named with the
 * signal, and the engine opens on the next tier, which scores as the
 * engine without the hook does. */
static void test_a_faulting_self_check_drops_its_tier(void **state)
{
    (void)state;
    lms_engine_options o = fixture_options();
    o.test_self_check_signal = SIGSEGV;
    lms_engine *faulted = fixture_open(&o);
    assert_non_null(faulted);
    lms_model_info mi;
    lms_engine_model_info(faulted, &mi);
    print_message("isa %s; dropped: \"%s\"\n", mi.isa, mi.isa_dropped);
    assert_string_equal(mi.isa_dropped,
                        "avx512-bf16 faulted (Segmentation fault) in its self-check");
    assert_string_not_equal(mi.isa, "avx512-bf16");
    fixture_request f = fixture_request_make(21, 10, 5, 1, 6);
    lms_score_result got = fixture_score(faulted, &f.req, LMS_ALGO_SERIAL);
    lms_score_result want = fixture_score(engine, &f.req, LMS_ALGO_SERIAL);
    assert_non_null(got.scores);
    assert_non_null(want.scores);
    /* f32 weights: every vector tier gives the same bits (kernels.h) */
    assert_memory_equal(got.logprobs, want.logprobs, 5 * 4 * sizeof(float));
    lms_score_result_free(&got);
    lms_score_result_free(&want);
    fixture_request_free(&f);
    lms_engine_close(faulted);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_softmax_and_exp),
        cmocka_unit_test(test_empty_item_scores_at_query_end),
        cmocka_unit_test(test_item_first),
        cmocka_unit_test(test_empty_item_list),
        cmocka_unit_test(test_validation_reasons),
        cmocka_unit_test(test_dense_mask_guard),
        cmocka_unit_test(test_streaming_and_cancellation),
        cmocka_unit_test(test_session_batches),
        cmocka_unit_test(test_session_query_limit_and_stop),
        cmocka_unit_test(test_a_faulting_self_check_drops_its_tier),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
