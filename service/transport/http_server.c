/*
 * http_server.c — the HTTP API's transport (see http_server.h). A request
 * is an exchange: its call, its body and, once the call has ended, its
 * answer. http_listener hands over the head (begin: the call opens, and
 * ends at once when the request is refused), the body piece by piece
 * (refused past the size limit as it passes it, or from its
 * Content-Length before any of it is read, so a body over the limit is
 * never held) and its end (complete: the endpoint's work starts); the
 * call's end answers (on_end, on whatever thread ended it), and while the
 * work runs the listener watches the client's socket: a client that hangs
 * up cancels the call, as a gRPC client's cancellation does.
 *
 * The HTTP/1.1 server is the daemon's own (http1_parser, http_listener):
 * libmicrohttpd, used before, answered its parser's errors with HTML pages
 * of its own (a bad Content-Length with its status line twice) and cut a
 * header value at a NUL byte, so that neither could be refused as the API
 * documents; every refusal of the parser is now the documented JSON error
 * (refused), and a control byte in a header value is refused, never cut.
 */
#include "http_server.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_listener.h"
#include "http_status.h"
#include "request_context.h"
#include "tls.h"

/* The connection threads: one a core of the 2-core machines the daemon
 * is sized for. They parse requests, decode bodies and render answers;
 * the scoring runs on the engine's own threads. */
#define HTTP_THREADS 2
/* The request line's target and the header fields, each refused past its
 * limit with a JSON answer (414, 431). */
#define MAX_URI_BYTES    ((size_t)8 << 10)
#define MAX_HEADER_BYTES ((size_t)16 << 10)

struct http_server {
    http_listener *listener;
    http_options opt;
    tls_pem_pair pem; /* kept while the server runs */
    char *refusal;    /* the 503 of a connection past the limits: JSON */
};

typedef struct {
    http_server *srv;
    http_request *rq;
    const http_endpoint *ep; /* NULL: nothing served at the request's path */
    request_context context; /* the call's, its request id sent back */
    call *c;
    char *body;
    size_t len, cap;
    size_t announced; /* Content-Length + 1; 0: chunked */

    char origin[256]; /* a CORS origin allowed, answered; "" for none */
    bool preflight;   /* a CORS preflight, answered with no body */

    pthread_mutex_t mu; /* guards ended */
    pthread_cond_t answered;
    bool ended; /* on_end has answered: nothing of ex is touched by it after */
} exchange;

static const char *method_of(const http_endpoint *ep)
{
    return ep->method ? ep->method : "POST";
}

/* What a path takes: HEAD beside GET (RFC 9110 9.1: a server that takes
 * GET on a path takes HEAD, answered as GET without the body). */
static const char *allowed_of(const http_endpoint *ep)
{
    return strcmp(method_of(ep), "GET") == 0 ? "GET, HEAD" : method_of(ep);
}

static bool takes(const http_endpoint *ep, const char *method)
{
    return strcmp(method, method_of(ep)) == 0 ||
           (strcmp(method, "HEAD") == 0 && strcmp(method_of(ep), "GET") == 0);
}

/* The header fields of an answer of status: its request id (when it
 * answers a request), and what the status calls for. */
static void answer_headers(unsigned status, const exchange *ex, char *buf, size_t cap)
{
    int n = 0;
    if (ex) n += snprintf(buf, cap, "%s: %s\r\n", REQUEST_ID_HEADER, ex->context.request_id);
    if (ex && ex->origin[0])
        n += snprintf(buf + n, cap - (size_t)n,
                      "Access-Control-Allow-Origin: %s\r\nVary: Origin\r\n"
                      "Access-Control-Expose-Headers: %s\r\n",
                      ex->origin, REQUEST_ID_HEADER);
    if (ex && ex->origin[0] && ex->preflight)
        n += snprintf(buf + n, cap - (size_t)n,
                      "Access-Control-Allow-Methods: %s, OPTIONS\r\n"
                      "Access-Control-Allow-Headers: authorization, content-type, %s, %s\r\n"
                      "Access-Control-Max-Age: 600\r\n",
                      ex->ep ? (ex->ep->method ? ex->ep->method : "POST") : "GET, POST",
                      REQUEST_ID_HEADER, TRACEPARENT_HEADER);
    if (status == 401) n += snprintf(buf + n, cap - (size_t)n, "WWW-Authenticate: Bearer\r\n");
    if (status == 405)
        n += snprintf(buf + n, cap - (size_t)n, "Allow: %s\r\n",
                      ex && ex->ep && ex->ep->method ? allowed_of(ex->ep) : "POST");
    if (status == 429 || status == 503)
        n += snprintf(buf + n, cap - (size_t)n, "Retry-After: 1\r\n");
    if (n == 0) buf[0] = '\0';
}

static const char OUT_OF_MEMORY[] =
    "{\"error\":{\"code\":500,\"status\":\"INTERNAL\",\"message\":\"out of memory\"}}";

/* The call's end (any thread): its answer, rendered now, while the reply
 * is valid. */
static void on_end(call *c, void *ctx, const rpc_status *st, const ProtobufCMessage *reply)
{
    exchange *ex = ctx;
    json_writer w;
    json_writer_init(&w);
    unsigned status = http_status_of(st);
    if (st->code == GRPC_STATUS_OK && ex->preflight) {
        /* no body: the CORS headers are the answer */
    } else if (st->code == GRPC_STATUS_OK) {
        ex->ep->render(c, reply, &w);
    } else if (ex->ep && ex->ep->name_fields) {
        rpc_status named = *st;
        ex->ep->name_fields(&named);
        http_status_json(&named, &w);
    } else {
        http_status_json(st, &w);
    }
    char *text = NULL;
    size_t len = 0;
    if (!json_writer_done(&w, &text, &len) && !(st->code == GRPC_STATUS_OK && ex->preflight))
        status = 500;
    char headers[768];
    answer_headers(status, ex, headers, sizeof headers);
    /* a server that is draining or not ready closes the connection after
     * its 503, so that no client sends the next request on it */
    bool empty = st->code == GRPC_STATUS_OK && ex->preflight;
    const http_answer a = {.status = status,
                           .content_type = empty ? "text/plain; charset=utf-8" : "application/json",
                           .body = empty  ? ""
                                   : text ? text
                                          : OUT_OF_MEMORY,
                           .body_len = empty  ? 0
                                       : text ? len
                                              : sizeof OUT_OF_MEMORY - 1,
                           .headers = headers,
                           .close = status == 503};
    http_request_answer(ex->rq, &a);
    free(text);
    /* Once ended is seen, the connection's thread may free ex: nothing of
     * ex is touched after the unlock. */
    pthread_mutex_lock(&ex->mu);
    ex->ended = true;
    pthread_cond_broadcast(&ex->answered);
    pthread_mutex_unlock(&ex->mu);
}

/* The listener's receive budget is spent by bodies arriving faster than
 * this one. */
static void refuse_buffer_full(void *state)
{
    exchange *ex = state;
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "receive_buffer_full", NULL,
                   "the server holds %lld bytes of request bodies still arriving, its limit "
                   "(--max-receive-buffer), none of them arriving slower than this one: retry "
                   "later",
                   (long long)ex->srv->opt.max_receive_buffer);
    call_finish(ex->c, &st);
}

static void refuse_too_large(exchange *ex, unsigned long long size, const char *what)
{
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "message_too_large", NULL,
                   "the request body (%s%llu bytes) exceeds the server's max message size (%lld "
                   "bytes); send fewer items per call",
                   what, size, (long long)ex->srv->opt.max_body_bytes);
    call_finish(ex->c, &st);
}

/* The body the client announced (Content-Length) is refused before any of
 * it is read when it is too large; else the buffer grows as it arrives
 * (the listener counts what arrives against the receive budget), never
 * past the announced size. */
static void expect_body(exchange *ex, unsigned long long n)
{
    if (n > (unsigned long long)ex->srv->opt.max_body_bytes) {
        refuse_too_large(ex, n, "announced: ");
        return;
    }
    ex->announced = (size_t)n + 1;
}

/* A piece of the body. */
static void receive(exchange *ex, const char *data, size_t n)
{
    int64_t limit = ex->srv->opt.max_body_bytes;
    if ((int64_t)(ex->len + n) > limit) {
        refuse_too_large(ex, (unsigned long long)(ex->len + n), "at least ");
        return;
    }
    if (ex->len + n + 1 > ex->cap) {
        size_t cap = ex->cap ? ex->cap : 4096;
        while (cap < ex->len + n + 1)
            cap *= 2;
        if ((int64_t)cap > limit + 1) cap = (size_t)limit + 1;
        if (ex->announced && cap > ex->announced) cap = ex->announced;
        char *grown = realloc(ex->body, cap);
        if (!grown) {
            rpc_status st;
            rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
            call_finish(ex->c, &st);
            return;
        }
        ex->body = grown;
        ex->cap = cap;
    }
    memcpy(ex->body + ex->len, data, n);
    ex->len += n;
}

/* What the handler reads of the request's headers: the first
 * x-request-id, the traceparent when there is exactly one (several are
 * ambiguous), as the gRPC call layer reads its metadata; the authorization
 * values; the content type. */
typedef struct {
    const char *request_id, *traceparent, *authorization, *content_type, *origin;
    size_t request_id_len, traceparent_len, authorization_len, content_type_len, origin_len;
    bool cors_request_method; /* Access-Control-Request-Method: a preflight */
    size_t traceparents, authorizations;
} request_headers;

static void read_headers(const http_request *rq, request_headers *h)
{
    const http1_request *p = rq->parsed;
    for (size_t i = 0; i < p->n_fields; i++) {
        http1_span name = p->fields[i].name;
        const char *value = rq->head + p->fields[i].value.off;
        size_t len = p->fields[i].value.len;
        if (http1_span_is(rq->head, name, REQUEST_ID_HEADER)) {
            if (!h->request_id) h->request_id = value, h->request_id_len = len;
        } else if (http1_span_is(rq->head, name, TRACEPARENT_HEADER)) {
            if (h->traceparents++ == 0) h->traceparent = value, h->traceparent_len = len;
        } else if (http1_span_is(rq->head, name, "authorization")) {
            if (h->authorizations++ == 0) h->authorization = value, h->authorization_len = len;
        } else if (http1_span_is(rq->head, name, "content-type")) {
            if (!h->content_type) h->content_type = value, h->content_type_len = len;
        } else if (http1_span_is(rq->head, name, "origin")) {
            if (!h->origin) h->origin = value, h->origin_len = len;
        } else if (http1_span_is(rq->head, name, "access-control-request-method")) {
            h->cors_request_method = true;
        }
    }
}

/* application/json, with any parameters (charset=utf-8) */
static bool is_json(const char *content_type, size_t len)
{
    static const char json[] = "application/json";
    size_t n = sizeof json - 1;
    if (len < n || strncasecmp(content_type, json, n) != 0) return false;
    while (n < len && (content_type[n] == ' ' || content_type[n] == '\t'))
        n++;
    return n == len || content_type[n] == ';';
}

/* The request's Origin when --http-cors-allow-origin allows it (copied
 * into ex->origin, to be echoed). */
static void allow_origin(exchange *ex, const request_headers *h)
{
    const char *allowed = ex->srv->opt.cors_origins;
    if (!allowed || !allowed[0] || !h->origin || h->origin_len >= sizeof ex->origin) return;
    bool ok = strcmp(allowed, "*") == 0;
    for (const char *p = allowed; !ok && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] != 0)) {
        size_t n = strcspn(p, ",");
        ok = n == h->origin_len && memcmp(p, h->origin, n) == 0;
    }
    if (!ok) return;
    memcpy(ex->origin, h->origin, h->origin_len);
    ex->origin[h->origin_len] = '\0';
}

static const http_endpoint *find_endpoint(const http_server *s, const char *path)
{
    for (size_t i = 0; i < s->opt.n_endpoints; i++)
        if (strcmp(s->opt.endpoints[i]->path, path) == 0) return s->opt.endpoints[i];
    for (size_t i = 0; i < s->opt.n_endpoints; i++) {
        const http_endpoint *ep = s->opt.endpoints[i];
        size_t n = strcspn(ep->path, "{");
        if (ep->under && strncmp(ep->path, path, n) == 0 && path[n]) return ep;
    }
    return NULL;
}

/* The head is in: the exchange and its call, ended at once when the
 * request is refused. NULL when out of memory. */
static void *begin(void *cls, http_request *rq)
{
    http_server *s = cls;
    exchange *ex = calloc(1, sizeof *ex);
    if (!ex) return NULL;
    ex->srv = s;
    ex->rq = rq;
    ex->ep = find_endpoint(s, rq->path);
    pthread_mutex_init(&ex->mu, NULL);
    pthread_cond_init(&ex->answered, NULL);
    request_headers h = {0};
    read_headers(rq, &h);
    allow_origin(ex, &h);
    /* a browser's preflight, before a call it makes from another origin:
     * answered without the API key, which it never carries */
    ex->preflight = ex->origin[0] && h.cors_request_method && strcmp(rq->method, "OPTIONS") == 0;
    request_context_init(&ex->context, h.request_id, h.request_id_len,
                         h.traceparents == 1 ? h.traceparent : NULL,
                         h.traceparents == 1 ? h.traceparent_len : 0);
    char name[128];
    snprintf(name, sizeof name, "%s %s", rq->method, rq->path);
    call_sink sink = {.on_end = on_end, .ctx = ex};
    ex->c = call_open(ex->ep ? &ex->ep->handler : NULL, name, &ex->context, &sink);
    if (!ex->c) {
        pthread_cond_destroy(&ex->answered);
        pthread_mutex_destroy(&ex->mu);
        free(ex);
        return NULL;
    }
    rpc_status st;
    if (ex->preflight && ex->ep) {
        rpc_status_ok(&st);
        call_finish(ex->c, &st);
    } else if (!(ex->ep && ex->ep->handler.open) &&
               !api_keys_check(s->opt.keys, h.authorization, h.authorization_len, h.authorizations,
                               &st)) {
        call_finish(ex->c, &st);
    } else if (!ex->ep) {
        /* the path is the client's bytes: not echoed */
        char served[256] = "";
        for (size_t i = 0, n = 0; i < s->opt.n_endpoints && n < sizeof served; i++)
            n += (size_t)snprintf(served + n, sizeof served - n, "%s%s %s", i ? ", " : "",
                                  method_of(s->opt.endpoints[i]), s->opt.endpoints[i]->path);
        rpc_status_set(&st, GRPC_STATUS_UNIMPLEMENTED, "not_found", NULL,
                       "nothing is served at this path; the endpoints are %s", served);
        call_finish(ex->c, &st);
    } else if (!takes(ex->ep, rq->method)) {
        rpc_status_set(&st, GRPC_STATUS_UNIMPLEMENTED, "method_not_allowed", NULL,
                       "%s takes %s, not %.16s", ex->ep->path, allowed_of(ex->ep), rq->method);
        call_finish(ex->c, &st);
    } else if (h.content_type && !is_json(h.content_type, h.content_type_len)) {
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "unsupported_media_type", NULL,
                       "%s takes a JSON body: Content-Type application/json (or none)",
                       ex->ep->path);
        call_finish(ex->c, &st);
    } else if (rq->parsed->has_length) {
        expect_body(ex, rq->parsed->content_length);
    }
    return ex;
}

static void on_body(void *state, const char *data, size_t n)
{
    receive(state, data, n);
}

/* The body is complete: the endpoint's work starts; its end answers. */
static void on_complete(void *state)
{
    static char empty[1];
    exchange *ex = state;
    ex->ep->on_body(ex->c, ex->body ? ex->body : empty, ex->len);
    /* the request has been read into its own structures */
    free(ex->body);
    ex->body = NULL;
    ex->len = ex->cap = 0;
}

static void on_hangup(void *state)
{
    exchange *ex = state;
    call_cancel(ex->c); /* the end follows: the work stops at its next check */
}

/* The parser refused the body: the call ends with the refusal. */
static void on_failed(void *state, const http1_error *e)
{
    exchange *ex = state;
    rpc_status st;
    http_status_from_parse(e, &st);
    call_finish(ex->c, &st);
}

/* The request is over, answered or not (the client gone, the server
 * stopping): a call that has not ended ends CANCELLED, and one whose
 * answer did not go out whole is logged as such. ex is freed once on_end
 * is done with it. */
static void on_finished(void *state, bool sent)
{
    exchange *ex = state;
    pthread_mutex_lock(&ex->mu);
    bool ended = ex->ended;
    pthread_mutex_unlock(&ex->mu);
    if (ended && !sent) {
        call_answer_lost(ex->c);
    } else if (!ended) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_CANCELLED, NULL, NULL,
                       "the connection closed before the request was complete");
        call_cancel(ex->c);
        call_finish(ex->c, &st);
    }
    pthread_mutex_lock(&ex->mu);
    while (!ex->ended)
        pthread_cond_wait(&ex->answered, &ex->mu);
    pthread_mutex_unlock(&ex->mu);
    call_unref(ex->c);
    free(ex->body);
    pthread_cond_destroy(&ex->answered);
    pthread_mutex_destroy(&ex->mu);
    free(ex);
}

/* A request the parser refused, in the documented JSON form: it is no
 * call (its head may not even name a method or a path). */
static void on_refused(void *cls, const http1_error *e, http_answer *out, char *buf, size_t cap)
{
    (void)cls;
    rpc_status st;
    http_status_from_parse(e, &st);
    json_writer w;
    json_writer_init(&w);
    http_status_json(&st, &w);
    char *text = NULL;
    size_t len = 0;
    unsigned status = http_status_of(&st);
    if (!json_writer_done(&w, &text, &len) || len >= cap / 2) {
        free(text);
        text = NULL;
    }
    size_t body_len = text ? len : sizeof OUT_OF_MEMORY - 1;
    memcpy(buf, text ? text : OUT_OF_MEMORY, body_len);
    free(text);
    answer_headers(status, NULL, buf + body_len, cap - body_len);
    *out = (http_answer){.status = status,
                         .content_type = "application/json",
                         .body = buf,
                         .body_len = body_len,
                         .headers = buf + body_len};
}

/* The answer to a connection past the limits, as every error: JSON. */
static char *refusal_json(void)
{
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_UNAVAILABLE, "too_many_connections", NULL,
                   "the server holds as many connections as it may, none of them one it can "
                   "close for this one (--http-max-connections, "
                   "--http-max-connections-per-peer): retry later");
    json_writer w;
    json_writer_init(&w);
    http_status_json(&st, &w);
    char *text = NULL;
    size_t len = 0;
    return json_writer_done(&w, &text, &len) ? text : NULL;
}

lms_status http_server_start(const http_options *opt, http_server **out, lms_error *err)
{
    http_server *s = calloc(1, sizeof *s);
    if (!s) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    s->opt = *opt;
    bool tls = opt->tls_cert && opt->tls_cert[0];
    lms_status st = LMS_OK;
    if (tls) st = tls_read_pair(opt->tls_cert, opt->tls_key, &s->pem, err);
    if (st == LMS_OK && !(s->refusal = refusal_json()))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    const http_listener_options lo = {
        .address = opt->listen,
        .flag = "http-listen",
        .limits = {.max_connections = opt->max_connections,
                   .max_per_peer = opt->max_per_peer,
                   .header_ms = opt->header_timeout_ms,
                   .body_min_rate = opt->body_min_rate,
                   .max_receive_bytes = opt->max_receive_buffer},
        .parse_limits = {.max_target = MAX_URI_BYTES, .max_fields_bytes = MAX_HEADER_BYTES},
        .threads = HTTP_THREADS,
        .tls_key = tls ? s->pem.key : NULL,
        .tls_cert = tls ? s->pem.cert : NULL,
        .refusal = s->refusal,
        .refusal_type = "application/json",
        .handler = {.begin = begin,
                    .body = on_body,
                    .complete = on_complete,
                    .failed = on_failed,
                    .over_budget = refuse_buffer_full,
                    .hangup = on_hangup,
                    .finished = on_finished,
                    .refused = on_refused},
        .cls = s};
    if (st == LMS_OK) st = http_listener_start(&lo, &s->listener, err);
    if (st != LMS_OK) {
        tls_pem_pair_free(&s->pem);
        free(s->refusal);
        free(s);
        return st;
    }
    *out = s;
    return LMS_OK;
}

int http_server_port(const http_server *s)
{
    return http_listener_port(s->listener);
}

void http_server_stop(http_server *s)
{
    if (!s) return;
    http_listener_stop(s->listener);
    tls_pem_pair_free(&s->pem);
    free(s->refusal);
    free(s);
}
