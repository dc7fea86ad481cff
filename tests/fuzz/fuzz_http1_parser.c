/*
 * fuzz_http1_parser.c — libFuzzer target for the HTTP/1.1 framing
 * (service/transport/http1_parser.c) on a connection's bytes. The first
 * input byte is the size of the pieces the bytes arrive in (1 to 256);
 * the rest is what the client sent. Checked:
 *
 * - the head parser gives the same result, request and error whole and in
 *   pieces (its incremental state loses nothing);
 * - a head it takes lies within the bytes, ends with CRLF CRLF, has a
 *   token method, a path starting with '/' (an absolute-form target's
 *   too), no control byte in a target or a field value (NUL, CR and LF
 *   above all), a minor version of 0 or 1 (a later 1.x is taken as 1.1),
 *   and at most one of Content-Length and chunked; its limits hold;
 * - every refusal has a status and reason of the documented set;
 * - a chunked body after the head decodes to the same bytes, result and
 *   end whole and in pieces, and its data is never more than its input.
 *
 * A violation aborts, which libFuzzer reports as a crash.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http1_parser.h"

static const http1_limits LIMITS = {.max_target = 512, .max_fields_bytes = 2048};

static void check(bool ok)
{
    if (!ok) abort();
}

static void check_error(const http1_error *e)
{
    static const struct {
        unsigned status;
        const char *reason;
    } known[] = {{400, "malformed_request"},
                 {401, "invalid_api_key"},
                 {414, "uri_too_long"},
                 {431, "headers_too_large"},
                 {501, "unsupported_transfer_coding"},
                 {505, "http_version_not_supported"}};
    bool found = false;
    for (size_t i = 0; i < sizeof known / sizeof *known; i++)
        found |= e->status == known[i].status && strcmp(e->reason, known[i].reason) == 0;
    check(found && e->message[0]);
}

static http1_result feed_head(const char *buf, size_t len, size_t piece, http1_request *req,
                              http1_error *err)
{
    http1_head_parser p;
    http1_head_init(&p, req);
    http1_result r = HTTP1_MORE;
    for (size_t n = piece < len ? piece : len; r == HTTP1_MORE; n += piece) {
        if (n > len) n = len;
        r = http1_head_feed(&p, req, buf, n, &LIMITS, err);
        if (n == len) break;
    }
    return r;
}

static bool control_free(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 && s[i] != '\t') return false;
    return true;
}

static void check_head(const char *buf, size_t len, const http1_request *req)
{
    check(req->head_len >= 4 && req->head_len <= len);
    check(memcmp(buf + req->head_len - 4, "\r\n\r\n", 4) == 0);
    check(req->method.len > 0 && req->method.len <= HTTP1_MAX_METHOD);
    check(memchr(buf + req->method.off, ' ', req->method.len) == NULL);
    check(req->path.len > 0 && buf[req->path.off] == '/' && req->path.len <= req->target.len);
    check(req->target.len <= LIMITS.max_target);
    check(control_free(buf + req->target.off, req->target.len));
    check(memchr(buf + req->target.off, ' ', req->target.len) == NULL);
    check(req->minor == 0 || req->minor == 1);
    check(!(req->chunked && req->has_length));
    check(req->n_fields <= HTTP1_MAX_FIELDS);
    for (size_t i = 0; i < req->n_fields; i++) {
        const http1_field *f = &req->fields[i];
        check(f->name.len > 0 && f->name.off + f->name.len <= req->head_len);
        check(f->value.off + f->value.len <= req->head_len);
        check(control_free(buf + f->value.off, f->value.len));
    }
}

typedef struct {
    char *data;
    size_t len;
} body;

static void sink(void *ctx, const char *data, size_t n)
{
    body *b = ctx;
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

static http1_result feed_chunked(const char *in, size_t len, size_t piece, body *b, size_t *taken,
                                 http1_error *err)
{
    http1_chunked c;
    http1_chunked_init(&c);
    size_t at = 0;
    http1_result r = HTTP1_MORE;
    while (at < len && r == HTTP1_MORE) {
        size_t used = 0, n = len - at < piece ? len - at : piece;
        r = http1_chunked_feed(&c, in + at, n, &used, &LIMITS, sink, b, err);
        check(used <= n && (r != HTTP1_MORE || used == n));
        at += used;
    }
    *taken = at;
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t piece = (size_t)data[0] + 1;
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;

    http1_request whole, pieces;
    http1_error e1 = {0}, e2 = {0};
    http1_result r1 = feed_head(buf, len, len ? len : 1, &whole, &e1);
    http1_result r2 = feed_head(buf, len, piece, &pieces, &e2);
    check(r1 == r2);
    if (r1 == HTTP1_ERROR) {
        check_error(&e1);
        check(e1.status == e2.status && strcmp(e1.message, e2.message) == 0);
        return 0;
    }
    if (r1 == HTTP1_MORE) return 0;
    check(memcmp(&whole, &pieces, sizeof whole) == 0);
    check_head(buf, len, &whole);
    if (!whole.chunked) return 0;

    const char *in = buf + whole.head_len;
    size_t n = len - whole.head_len;
    body b1 = {malloc(n + 1), 0}, b2 = {malloc(n + 1), 0};
    check(b1.data && b2.data);
    size_t t1 = 0, t2 = 0;
    r1 = feed_chunked(in, n, n ? n : 1, &b1, &t1, &e1);
    r2 = feed_chunked(in, n, piece, &b2, &t2, &e2);
    check(r1 == r2 && b1.len == b2.len && b1.len <= n && memcmp(b1.data, b2.data, b1.len) == 0);
    if (r1 == HTTP1_ERROR) check_error(&e1), check(e1.status == e2.status);
    if (r1 == HTTP1_DONE) check(t1 == t2 && t1 >= 5 && memcmp(in + t1 - 2, "\r\n", 2) == 0);
    free(b1.data);
    free(b2.data);
    return 0;
}
