/*
 * test_json_request.c — the HTTP API's request bodies (json_request.c) at
 * the edges of their types: every Algorithm number the enum names is read,
 * by number and by name, and every other int32 (negative, past the last
 * value, INT32_MIN and INT32_MAX) is refused as unknown_algorithm with
 * gRPC's message, never stored in a C enum that cannot hold it; token ids
 * and top_n at the limits of their ranges are read exactly, one past them
 * refused with the field named. fuzz_json_request checks the same class
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

static void test_every_named_algorithm_is_read(void **state)
{
    (void)state;
    const ProtobufCEnumDescriptor *d = &lmscore__v1__algorithm__descriptor;
    for (unsigned i = 0; i < d->n_values; i++) {
        char body[160];
        for (int by_name = 0; by_name < 2; by_name++) {
            if (by_name)
                snprintf(body, sizeof body, "{\"query\": [1], \"algorithm\": \"%s\"}",
                         d->values[i].name);
            else
                snprintf(body, sizeof body, "{\"query\": [1], \"algorithm\": %d}",
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
        snprintf(body, sizeof body, "{\"query\": [1], \"algorithm\": %d}", unnamed[i]);
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
    assert_int_equal(score("{\"query\": [0, 2147483647, -2147483648], "
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
        decode_budget budget;
        decode_budget_init(&budget, 1 << 20);
        rerank_request rr;
        char *model = NULL;
        lms_error err = {0};
        lms_status st =
            json_rerank_request(cases[i].body, strlen(cases[i].body), &budget, &rr, &model, &err);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_named_algorithm_is_read),
        cmocka_unit_test(test_unnamed_algorithm_numbers_are_refused),
        cmocka_unit_test(test_token_ids_at_the_edges_of_int32),
        cmocka_unit_test(test_top_n_at_the_edges_of_its_range),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
