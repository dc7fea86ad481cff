/*
 * test_http1_parser.c — the HTTP/1.1 framing module on its own: a request
 * head read whole and a byte at a time to the same result, what it takes
 * (HTTP/1.0, keep-alive rules, Expect, OWS, one empty line first), each
 * refusal with its status and reason (request line, version, limits as soon
 * as they are passed, field syntax, control bytes in values, Host, the
 * framing fields, an empty Transfer-Encoding), and chunked bodies (sizes, extensions, trailers, the
 * bytes after the end left alone, and each refusal). fuzz_http1_parser
 * feeds it arbitrary bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "http1_parser.h"

static const http1_limits LIMITS = {.max_target = 64, .max_fields_bytes = 256};

/* Feeds text to a fresh parser, all at once or one more byte each call. */
static http1_result parse(const char *text, bool bytewise, http1_request *req, http1_error *err)
{
    http1_head_parser p;
    http1_head_init(&p, req);
    size_t len = strlen(text);
    http1_result r = HTTP1_MORE;
    for (size_t n = bytewise ? 1 : len; n <= len && r == HTTP1_MORE; n++)
        r = http1_head_feed(&p, req, text, n, &LIMITS, err);
    return r;
}

static void expect_span(const char *text, http1_span sp, const char *want)
{
    assert_int_equal(sp.len, strlen(want));
    assert_memory_equal(text + sp.off, want, sp.len);
}

static void test_a_head_reads_the_same_whole_or_bytewise(void **state)
{
    (void)state;
    static const char text[] = "POST /v1/score?x=1 HTTP/1.1\r\n"
                               "Host: example\r\n"
                               "Content-Length:  12 \r\n"
                               "X-Request-Id:\tab c\t\r\n"
                               "\r\n"
                               "{\"query\": 1}";
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        http1_request req;
        http1_error err;
        assert_int_equal(parse(text, bytewise, &req, &err), HTTP1_DONE);
        expect_span(text, req.method, "POST");
        expect_span(text, req.target, "/v1/score?x=1");
        expect_span(text, req.path, "/v1/score");
        assert_int_equal(req.minor, 1);
        assert_int_equal(req.n_fields, 3);
        assert_true(req.has_length);
        assert_int_equal(req.content_length, 12);
        assert_false(req.chunked);
        assert_true(req.keep_alive);
        assert_false(req.expect_continue);
        assert_int_equal(req.head_len, strlen(text) - 12);
        size_t len = 0;
        const char *v = http1_field_value(&req, text, "x-request-id", &len);
        assert_non_null(v);
        assert_int_equal(len, 4);
        assert_memory_equal(v, "ab c", 4);
        assert_null(http1_field_value(&req, text, "authorization", &len));
    }
}

static void test_what_it_takes(void **state)
{
    (void)state;
    http1_request req;
    http1_error err;
    assert_int_equal(parse("GET / HTTP/1.0\r\n\r\n", false, &req, &err), HTTP1_DONE);
    assert_int_equal(req.minor, 0);
    assert_false(req.keep_alive);
    assert_int_equal(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", false, &req, &err),
                     HTTP1_DONE);
    assert_true(req.keep_alive);
    assert_int_equal(
        parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: x, close\r\n\r\n", false, &req, &err),
        HTTP1_DONE);
    assert_false(req.keep_alive);
    assert_int_equal(parse("\r\nPOST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\n"
                           "Transfer-Encoding: ,Chunked\r\n\r\n",
                           true, &req, &err),
                     HTTP1_DONE);
    assert_true(req.chunked);
    assert_true(req.expect_continue);
    /* 1.0 ignores a 100-continue expectation */
    assert_int_equal(parse("GET / HTTP/1.0\r\nExpect: 100-continue\r\n\r\n", false, &req, &err),
                     HTTP1_DONE);
    assert_false(req.expect_continue);
    /* a later 1.x is 1.1 (RFC 9110 2.5) */
    assert_int_equal(parse("GET / HTTP/1.2\r\nHost: a\r\n\r\n", false, &req, &err), HTTP1_DONE);
    assert_int_equal(req.minor, 1);
    assert_true(req.keep_alive);
    /* the absolute form's path is routed (RFC 9112 3.2.2); with none, "/" */
    static const char *absolute[][2] = {{"http://a/v1/score?x=1", "/v1/score"},
                                        {"HTTPS://a:80/b", "/b"},
                                        {"http://a", "/"},
                                        {"http://a?x=/y", "/"}};
    for (size_t i = 0; i < sizeof absolute / sizeof *absolute; i++) {
        char text[128];
        snprintf(text, sizeof text, "GET %s HTTP/1.1\r\nHost: a\r\n\r\n", absolute[i][0]);
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            assert_int_equal(parse(text, bytewise, &req, &err), HTTP1_DONE);
            expect_span(text, req.target, absolute[i][0]);
            expect_span(text, req.path, absolute[i][1]);
        }
    }
    /* obs-text in the path: routed as sent */
    assert_int_equal(parse("GET /\xff\xfe HTTP/1.1\r\nHost: a\r\n\r\n", false, &req, &err),
                     HTTP1_DONE);
    assert_int_equal(req.path.len, 3);
}

typedef struct {
    const char *text;
    unsigned status;
    const char *reason;
} refusal;

static const refusal REFUSALS[] = {
    {"GARBAGE\r\n\r\n", 400, "malformed_request"},
    {"GA\x01RBAGE", 400, "malformed_request"},
    {" GET / HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET  / HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET ftp://a/ HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET http:///a HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET http://u@a/ HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET http:/a HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET * HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET /a\x7f HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1 \r\n", 400, "malformed_request"},
    {"GET / http/1.1\r\n", 400, "malformed_request"},
    {"GET / HTTP/2.0\r\n", 505, "http_version_not_supported"},
    {"GET / HTTP/2.1\r\n", 505, "http_version_not_supported"},
    {"GET / HTTP/0.9\r\n", 505, "http_version_not_supported"},
    {"GET / HTTP/1.1\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\r\n", 400, "malformed_request"},
    {"\r\n\r\nGET / HTTP/1.1\r\n", 400, "malformed_request"},
    {"GET /aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 414,
     "uri_too_long"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX: "
     "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567"
     "8901234567890123456789012345678901234567890123456789012345678901234567890123456789012345"
     "678901234567890123456789012345678901234567890123456789012345678901234567890123456789",
     431, "headers_too_large"},
    {"GET / HTTP/1.1\r\nHost: a\r\n X: b\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost : a\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\n: a\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost a\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-Id: a\x01"
     "b\r\n\r\n",
     400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nX-Id: a\x7f\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer k\x01\r\n\r\n", 401, "invalid_api_key"},
    {"GET / HTTP/1.1\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: u@a\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nContent-Length: 1\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1, 1\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456789\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nContent-Length: 1\r\nTransfer-Encoding: chunked\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: "
     "chunked\r\n\r\n",
     400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;q=1\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501,
     "unsupported_transfer_coding"},
    {"GET / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "malformed_request"},
    /* an empty Transfer-Encoding is one, whose final coding is not chunked */
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: ,\r\nContent-Length: 2\r\n\r\n", 400,
     "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\t\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: , ,\r\n\r\n", 400, "malformed_request"},
    {"GET / HTTP/1.0\r\nTransfer-Encoding:\r\n\r\n", 400, "malformed_request"},
};

static void test_each_refusal_has_its_status_and_reason(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof REFUSALS / sizeof *REFUSALS; i++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            http1_request req;
            http1_error err = {0};
            http1_result r = parse(REFUSALS[i].text, bytewise, &req, &err);
            if (r != HTTP1_ERROR || err.status != REFUSALS[i].status ||
                strcmp(err.reason, REFUSALS[i].reason) != 0)
                fail_msg("case %zu (%s): result %d, status %u %s: %s", i,
                         bytewise ? "bytewise" : "whole", (int)r, err.status,
                         err.reason ? err.reason : "-", err.message);
            assert_true(err.message[0] != '\0');
        }
    }
}

static void test_too_many_fields_are_431(void **state)
{
    (void)state;
    static const http1_limits wide = {.max_target = 64, .max_fields_bytes = 1 << 20};
    char text[8192] = "GET / HTTP/1.1\r\n";
    for (int i = 0; i <= HTTP1_MAX_FIELDS; i++)
        strcat(text, "A: b\r\n");
    strcat(text, "\r\n");
    http1_head_parser p;
    http1_request req;
    http1_error err;
    http1_head_init(&p, &req);
    assert_int_equal(http1_head_feed(&p, &req, text, strlen(text), &wide, &err), HTTP1_ERROR);
    assert_int_equal(err.status, 431);
}

typedef struct {
    char data[256];
    size_t len;
} sink_buf;

static void sink(void *ctx, const char *data, size_t n)
{
    sink_buf *b = ctx;
    assert_true(b->len + n <= sizeof b->data);
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

/* Decodes text whole or a byte a call: the result, the body, and how many
 * bytes were taken in all. */
static http1_result chunked(const char *text, bool bytewise, sink_buf *body, size_t *taken,
                            http1_error *err)
{
    http1_chunked c;
    http1_chunked_init(&c);
    memset(body, 0, sizeof *body);
    size_t len = strlen(text), at = 0;
    http1_result r = HTTP1_MORE;
    while (at < len && r == HTTP1_MORE) {
        size_t used = 0, step = bytewise ? 1 : len - at;
        r = http1_chunked_feed(&c, text + at, step, &used, &LIMITS, sink, body, err);
        at += used;
    }
    *taken = at;
    return r;
}

static void test_chunked_bodies_decode_whole_or_bytewise(void **state)
{
    (void)state;
    static const char text[] = "4\r\nWiki\r\n0005;name=\"v\";x\r\npedia\r\n"
                               "E \t; a=b\r\n in\r\n\r\nchunks.\r\n"
                               "0\r\nX-Trailer: t\r\nY: \r\n\r\n"
                               "GET / HTTP/1.1\r\n";
    for (int bytewise = 0; bytewise < 2; bytewise++) {
        sink_buf body;
        size_t taken = 0;
        http1_error err;
        assert_int_equal(chunked(text, bytewise, &body, &taken, &err), HTTP1_DONE);
        assert_int_equal(body.len, 23);
        assert_memory_equal(body.data, "Wikipedia in\r\n\r\nchunks.", 23);
        assert_int_equal(taken, strlen(text) - strlen("GET / HTTP/1.1\r\n"));
    }
}

static void test_chunked_refusals(void **state)
{
    (void)state;
    static const refusal cases[] = {
        {"zz\r\n", 400, "malformed_request"},
        {"\r\n", 400, "malformed_request"},
        {";a\r\n", 400, "malformed_request"},
        {"1 x\r\n", 400, "malformed_request"},
        {"1000000000000000\r\n", 400, "malformed_request"},
        {"1;a\x01\r\n", 400, "malformed_request"},
        {"1\rx", 400, "malformed_request"},
        {"1\r\nabc\r\n", 400, "malformed_request"},
        {"1\r\na\r\r", 400, "malformed_request"},
        {"0\r\n X: a\r\n\r\n", 400, "malformed_request"},
        {"0\r\nX a\r\n\r\n", 400, "malformed_request"},
        {"0\r\nX: a\x01\r\n\r\n", 400, "malformed_request"},
        {"0\r\nX: a\rb", 400, "malformed_request"},
        {"0\r\n\rx", 400, "malformed_request"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            sink_buf body;
            size_t taken = 0;
            http1_error err = {0};
            http1_result r = chunked(cases[i].text, bytewise, &body, &taken, &err);
            if (r != HTTP1_ERROR || err.status != cases[i].status ||
                strcmp(err.reason, cases[i].reason) != 0)
                fail_msg("case %zu: result %d, status %u", i, (int)r, err.status);
        }
    }
    /* leading zeros are not significant digits; a long size line is */
    sink_buf body;
    size_t taken = 0;
    http1_error err;
    assert_int_equal(chunked("00000000000000000001\r\na\r\n0\r\n\r\n", false, &body, &taken, &err),
                     HTTP1_DONE);
    char line[HTTP1_MAX_CHUNK_LINE + 16] = "1;";
    memset(line + 2, 'x', HTTP1_MAX_CHUNK_LINE);
    line[HTTP1_MAX_CHUNK_LINE + 2] = '\0';
    assert_int_equal(chunked(line, false, &body, &taken, &err), HTTP1_ERROR);
    /* trailers count against the field limit */
    char trailers[1024] = "0\r\n";
    for (int i = 0; i < 40; i++)
        strcat(trailers, "X-T: 0123456\r\n");
    assert_int_equal(chunked(trailers, false, &body, &taken, &err), HTTP1_ERROR);
    assert_int_equal(err.status, 431);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_head_reads_the_same_whole_or_bytewise),
        cmocka_unit_test(test_what_it_takes),
        cmocka_unit_test(test_each_refusal_has_its_status_and_reason),
        cmocka_unit_test(test_too_many_fields_are_431),
        cmocka_unit_test(test_chunked_bodies_decode_whole_or_bytewise),
        cmocka_unit_test(test_chunked_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
