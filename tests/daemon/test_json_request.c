/*
 * test_json_request.c — the HTTP API's request bodies (json_request.c) at
 * the edges of their types: every Algorithm number the enum names is read,
 * by number and by name, and every other int32 (negative, past the last
 * value, INT32_MIN and INT32_MAX) is refused as unknown_algorithm with
 * gRPC's message, never stored in a C enum that cannot hold it; token ids
 * and top_n at the limits of their ranges are read exactly, one past them
 * refused with the field named; a required member left out is refused by
 * name (missing_field), and each rerank dialect reads its own members.
 * fuzz_json_request checks the same class
 * (a body read, written back and read again decodes to the same message)
 * on random bodies.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_request.h"

static lms_status score(const char *body, Lmscore__V1__ScoreRequest **req, lms_error *err)
{
    decode_budget budget;
    decode_budget_init(&budget, 1 << 20);
    char *model = NULL;
    *err = (lms_error){0};
    lms_status st = json_score_request(body, strlen(body), &budget, req, &model, err);
    free(model);
    return st;
}

static lms_status rerank(rerank_dialect dialect, const char *body, rerank_request *rr, char **model,
                         lms_error *err)
{
    decode_budget budget;
    decode_budget_init(&budget, 1 << 20);
    *model = NULL;
    *err = (lms_error){0};
    return json_rerank_request(dialect, body, strlen(body), &budget, rr, model, err);
}

static void test_every_named_algorithm_is_read(void **state)
{
    (void)state;
    const ProtobufCEnumDescriptor *d = &lmscore__v1__algorithm__descriptor;
    for (unsigned i = 0; i < d->n_values; i++) {
        char body[160];
        for (int by_name = 0; by_name < 2; by_name++) {
            if (by_name)
                snprintf(body, sizeof body,
                         "{\"query\": [1], \"items\": [], \"algorithm\": \"%s\"}",
                         d->values[i].name);
            else
                snprintf(body, sizeof body, "{\"query\": [1], \"items\": [], \"algorithm\": %d}",
                         d->values[i].value);
            Lmscore__V1__ScoreRequest *req;
            lms_error err;
            assert_int_equal(score(body, &req, &err), LMS_OK);
            assert_int_equal((int)req->algorithm, d->values[i].value);
            protobuf_c_message_free_unpacked(&req->base, NULL);
        }
    }
}

static void test_unnamed_algorithm_numbers_are_refused(void **state)
{
    (void)state;
    const int unnamed[] = {-1, -455555, 5, 17, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unnamed / sizeof *unnamed; i++) {
        char body[96], message[64];
        snprintf(body, sizeof body, "{\"query\": [1], \"items\": [], \"algorithm\": %d}",
                 unnamed[i]);
        snprintf(message, sizeof message, "algorithm: unknown value %d", unnamed[i]);
        Lmscore__V1__ScoreRequest *req = (void *)1;
        lms_error err;
        assert_int_equal(score(body, &req, &err), LMS_ERR_INVALID_ARGUMENT);
        assert_null(req);
        assert_string_equal(err.reason, "unknown_algorithm");
        assert_string_equal(err.field, "algorithm");
        assert_string_equal(err.msg, message);
    }
    /* past int32: not a number of the field's type at all */
    Lmscore__V1__ScoreRequest *req;
    lms_error err;
    assert_int_equal(score("{\"algorithm\": 2147483648}", &req, &err), LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "malformed_request");
    assert_string_equal(err.field, "algorithm");
}

static void test_token_ids_at_the_edges_of_int32(void **state)
{
    (void)state;
    Lmscore__V1__ScoreRequest *req;
    lms_error err;
    assert_int_equal(score("{\"query\": [0, 2147483647, -2147483648], \"items\": [], "
                           "\"label_token_ids\": [2147483647]}",
                           &req, &err),
                     LMS_OK);
    assert_int_equal(req->query->token_ids->n_ids, 3);
    assert_int_equal(req->query->token_ids->ids[1], INT32_MAX);
    assert_int_equal(req->query->token_ids->ids[2], INT32_MIN);
    assert_int_equal(req->label_token_ids[0], INT32_MAX);
    protobuf_c_message_free_unpacked(&req->base, NULL);
    assert_int_equal(score("{\"items\": [[1], [2147483648]]}", &req, &err),
                     LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.field, "items[1][0]");
    assert_int_equal(score("{\"label_token_ids\": [-2147483649]}", &req, &err),
                     LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.field, "label_token_ids[0]");
}

static void test_top_n_at_the_edges_of_its_range(void **state)
{
    (void)state;
    const struct {
        const char *body;
        lms_status status;
        int64_t top_n;
    } cases[] = {
        {"{\"query\": \"q\", \"documents\": [\"d\"], \"top_n\": 0}", LMS_OK, 0},
        {"{\"query\": \"q\", \"documents\": [\"d\"], \"top_n\": 2147483647}", LMS_OK, INT32_MAX},
        {"{\"query\": \"q\", \"documents\": [\"d\"], \"top_n\": -1}", LMS_ERR_INVALID_ARGUMENT, 0},
        {"{\"query\": \"q\", \"documents\": [\"d\"], \"top_n\": 2147483648}",
         LMS_ERR_INVALID_ARGUMENT, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rerank_request rr;
        char *model;
        lms_error err;
        lms_status st = rerank(RERANK_COHERE, cases[i].body, &rr, &model, &err);
        assert_int_equal(st, cases[i].status);
        if (st == LMS_OK) {
            assert_int_equal(rr.top_n, cases[i].top_n);
            rerank_request_free(&rr);
        } else {
            assert_string_equal(err.field, "top_n");
        }
        free(model);
    }
}

/* Each absent (or null) required member is refused by name, after the
 * body has been read whole; an empty list is not an absent one. */
static void test_required_members(void **state)
{
    (void)state;
    const struct {
        const char *body, *reason, *field;
    } score_cases[] = {
        {"{\"query\": [1], \"items\": []}", NULL, NULL},
        {"{\"query\": [1]}", "missing_field", "items"},
        {"{\"query\": [1], \"itmes\": [[2]]}", "missing_field", "items"},
        {"{\"query\": [1], \"items\": null}", "missing_field", "items"},
        {"{\"items\": [[2]]}", "missing_field", "query"},
        {"{}", "missing_field", "query"},
        {"{\"query\": [1]} x", "malformed_request", NULL},
    };
    for (size_t i = 0; i < sizeof score_cases / sizeof *score_cases; i++) {
        Lmscore__V1__ScoreRequest *req = NULL;
        lms_error err;
        lms_status st = score(score_cases[i].body, &req, &err);
        if (!score_cases[i].reason) {
            assert_int_equal(st, LMS_OK);
            protobuf_c_message_free_unpacked(&req->base, NULL);
            continue;
        }
        assert_int_equal(st, LMS_ERR_INVALID_ARGUMENT);
        assert_string_equal(err.reason, score_cases[i].reason);
        if (score_cases[i].field) assert_string_equal(err.field, score_cases[i].field);
    }
    const struct {
        rerank_dialect dialect;
        const char *body, *reason, *field;
    } rerank_cases[] = {
        {RERANK_COHERE, "{\"query\": \"q\", \"documents\": []}", NULL, NULL},
        {RERANK_COHERE, "{\"documents\": [\"d\"]}", "missing_field", "query"},
        {RERANK_COHERE, "{\"query\": \"q\"}", "missing_field", "documents"},
        {RERANK_COHERE, "{\"query\": \"q\", \"documents\": [{\"title\": \"t\"}]}", "missing_field",
         "documents[0].text"},
        {RERANK_COHERE_V2, "{\"query\": \"q\", \"documents\": null}", "missing_field", "documents"},
        {RERANK_COHERE_V2, "{\"query\": \"q\", \"documents\": [{\"text\": \"d\"}]}",
         "malformed_request", "documents[0]"},
        {RERANK_COHERE_V2, "{\"query\": \"q\", \"documents\": [], \"max_tokens_per_doc\": 0}",
         "malformed_request", "max_tokens_per_doc"},
        {RERANK_TEI, "{\"query\": \"q\", \"documents\": [\"d\"]}", "missing_field", "texts"},
        {RERANK_TEI, "{\"query\": \"q\", \"texts\": [\"d\"], \"truncate\": true}", NULL, NULL},
        {RERANK_TEI,
         "{\"query\": \"q\", \"texts\": [\"d\"], \"truncation_direction\": \"sideways\"}",
         "invalid_truncation_direction", "truncation_direction"},
        {RERANK_TEI, "{\"query\": \"q\", \"texts\": [\"d\"], \"truncation_direction\": 3}",
         "invalid_truncation_direction", "truncation_direction"},
        {RERANK_TEI, "{\"query\": \"q\", \"texts\": [\"d\"], \"truncation_direction\": {}}",
         "invalid_truncation_direction", "truncation_direction"},
        {RERANK_TEI, "{\"query\": \"q\", \"texts\": [\"d\"], \"truncation_direction\": \"left\"}",
         "invalid_truncation_direction", "truncation_direction"},
        {RERANK_COHERE, "{\"query\": \"q\", \"documents\": [], \"truncate_prompt_tokens\": 0}",
         "malformed_request", "truncate_prompt_tokens"},
        {RERANK_TEI, "{\"query\": \"q\", \"texts\": [\"d\"], \"truncate\": false}", NULL, NULL},
    };
    for (size_t i = 0; i < sizeof rerank_cases / sizeof *rerank_cases; i++) {
        rerank_request rr;
        char *model;
        lms_error err;
        lms_status st = rerank(rerank_cases[i].dialect, rerank_cases[i].body, &rr, &model, &err);
        free(model);
        if (!rerank_cases[i].reason) {
            assert_int_equal(st, LMS_OK);
            rerank_request_free(&rr);
            continue;
        }
        assert_int_equal(st, LMS_ERR_INVALID_ARGUMENT);
        assert_string_equal(err.reason, rerank_cases[i].reason);
        assert_string_equal(err.field, rerank_cases[i].field);
    }
}

/* What each dialect reads: its own members, its own defaults. */
static void test_rerank_dialects(void **state)
{
    (void)state;
    const char *body = "{\"query\": \"q\", \"documents\": [\"d\"], \"texts\": [\"t\", \"u\"], "
                       "\"return_documents\": false, \"return_text\": true, \"raw_scores\": true, "
                       "\"top_n\": 1, \"model\": \"m\"}";
    const struct {
        rerank_dialect dialect;
        size_t n_documents;
        bool return_documents, raw_scores, model;
        int64_t top_n;
    } cases[] = {{RERANK_COHERE, 1, false, false, true, 1},
                 {RERANK_COHERE_V2, 1, false, false, true, 1},
                 {RERANK_TEI, 2, true, true, false, 0}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        rerank_request rr;
        char *model;
        lms_error err;
        assert_int_equal(rerank(cases[i].dialect, body, &rr, &model, &err), LMS_OK);
        assert_int_equal(rr.n_documents, cases[i].n_documents);
        assert_int_equal(rr.return_documents, cases[i].return_documents);
        assert_int_equal(rr.raw_scores, cases[i].raw_scores);
        assert_int_equal(rr.top_n, cases[i].top_n);
        assert_int_equal(model != NULL, cases[i].model);
        free(model);
        rerank_request_free(&rr);
    }
    /* the defaults: documents back on /v1/rerank only */
    const char *bare[] = {"{\"query\": \"q\", \"documents\": []}",
                          "{\"query\": \"q\", \"documents\": []}",
                          "{\"query\": \"q\", \"texts\": []}"};
    for (rerank_dialect d = RERANK_COHERE; d <= RERANK_TEI; d++) {
        rerank_request rr;
        char *model;
        lms_error err;
        assert_int_equal(rerank(d, bare[d], &rr, &model, &err), LMS_OK);
        assert_int_equal(rr.return_documents, d == RERANK_COHERE);
        assert_false(rr.raw_scores);
        rerank_request_free(&rr);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_named_algorithm_is_read),
        cmocka_unit_test(test_unnamed_algorithm_numbers_are_refused),
        cmocka_unit_test(test_token_ids_at_the_edges_of_int32),
        cmocka_unit_test(test_top_n_at_the_edges_of_its_range),
        cmocka_unit_test(test_required_members),
        cmocka_unit_test(test_rerank_dialects),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
