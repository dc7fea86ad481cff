/*
 * http_server.c — the HTTP API's transport (see http_server.h). A request
 * is an exchange: its call, its body and, once the call has ended, its
 * answer. libmicrohttpd calls on_request for the headers, for each piece
 * of the body and at its end; the exchange then starts the endpoint's work
 * and suspends the connection until the call's end resumes it, while
 * http_listener watches the client's socket: a client that hangs up
 * cancels the call, as a gRPC client's cancellation does.
 *
 * Why libmicrohttpd: the daemon already links it for /metrics; it parses
 * HTTP/1.1 (keep-alive, chunked bodies, 100-continue) and does TLS
 * (GnuTLS) itself; it hands the body over piece by piece, so a body over
 * the limit is refused from its Content-Length, or as it passes the limit,
 * without being held. Why not its thread per connection (as before): a
 * connection that sends nothing, or a byte now and then, held a thread
 * and a connection slot for as long as its idle timeout, which each byte
 * restarted, so 256 slow clients shut the API. Instead http_listener (the
 * acceptor /metrics already had) admits connections within limits and
 * deadlines and pushes the slowest reader out for a new client, and
 * libmicrohttpd runs every connection on a small pool of threads: a
 * connection costs a thread only while bytes move or its request is
 * parsed, never while it waits, for its client or for the engine
 * (MHD_suspend_connection).
 */
#include "http_server.h"

#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_listener.h"
#include "http_status.h"
#include "request_context.h"
#include "tls.h"

/* libmicrohttpd's threads: one a core of the 2-core machines the daemon
 * is sized for. They parse requests, decode bodies and render answers;
 * the scoring runs on the engine's own threads. */
#define HTTP_THREADS 2
/* The request line's target and the header fields, each refused past its
 * limit with a JSON answer (414, 431). libmicrohttpd holds a request's
 * head in a buffer of its own per connection and answers one that does
 * not fit with an HTML page: the buffer is made well larger than the
 * limits, so that only a head past it meets that page. */
#define MAX_URI_BYTES    ((size_t)8 << 10)
#define MAX_HEADER_BYTES ((size_t)16 << 10)
#define CONNECTION_BYTES ((size_t)64 << 10)

struct http_server {
    http_listener *listener;
    http_options opt;
    tls_pem_pair pem;       /* kept while the daemon runs */
    char *refusal;          /* the 503 of a connection past the limits: JSON */
    atomic_llong receiving; /* bytes held for bodies being received */
};

typedef struct {
    http_server *srv;
    const http_endpoint *ep; /* NULL: nothing served at the request's path */
    request_context context; /* the call's, its request id sent back */
    call *c;
    char *body;
    size_t len, cap;
    int64_t reserved;            /* of srv->receiving */
    bool close;                  /* the answer closes the connection: the framing is in doubt */
    bool ran;                    /* the endpoint's work has started */
    struct MHD_Connection *conn; /* suspended while the call runs */

    pthread_mutex_t mu; /* guards the answer and suspended */
    bool suspended;
    bool ended;
    unsigned status;
    char *answer;
    size_t answer_len;
} exchange;

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
    if (st->code == GRPC_STATUS_OK) {
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
    if (!json_writer_done(&w, &text, &len)) status = 500;
    /* Once resumed, the connection's thread may answer and free ex: nothing
     * of ex is touched after the unlock. */
    pthread_mutex_lock(&ex->mu);
    ex->ended = true;
    ex->status = status;
    ex->answer = text;
    ex->answer_len = len;
    if (ex->suspended) MHD_resume_connection(ex->conn);
    ex->suspended = false;
    pthread_mutex_unlock(&ex->mu);
}

static bool ended(exchange *ex)
{
    pthread_mutex_lock(&ex->mu);
    bool e = ex->ended;
    pthread_mutex_unlock(&ex->mu);
    return e;
}

/* Takes n bytes of the receive budget for ex; false when it is spent. */
static bool reserve(exchange *ex, int64_t n)
{
    http_server *s = ex->srv;
    long long now = atomic_fetch_add(&s->receiving, n) + n;
    if (now > s->opt.max_receive_buffer) {
        atomic_fetch_sub(&s->receiving, n);
        return false;
    }
    ex->reserved += n;
    return true;
}

static void release(exchange *ex)
{
    atomic_fetch_sub(&ex->srv->receiving, ex->reserved);
    ex->reserved = 0;
}

static void refuse_buffer_full(exchange *ex)
{
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "receive_buffer_full", NULL,
                   "the server holds %lld bytes of request bodies still arriving, its limit "
                   "(--max-receive-buffer): retry later",
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

/* Room for the body the client announced (Content-Length), taken at once:
 * it is refused before any of it is read when it is too large. */
static void expect_body(exchange *ex, const char *content_length)
{
    char *end;
    errno = 0;
    unsigned long long n = strtoull(content_length, &end, 10);
    if (errno || end == content_length || *end) return; /* libmicrohttpd refuses it */
    if (n > (unsigned long long)ex->srv->opt.max_body_bytes) {
        refuse_too_large(ex, n, "announced: ");
        return;
    }
    if (!reserve(ex, (int64_t)n + 1)) {
        refuse_buffer_full(ex);
        return;
    }
    if (!(ex->body = malloc(n + 1))) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(ex->c, &st);
        return;
    }
    ex->cap = n + 1;
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
        if (!reserve(ex, (int64_t)(cap - ex->cap))) {
            refuse_buffer_full(ex);
            return;
        }
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

/* What the handler reads of the request's headers, with their lengths: the
 * first x-request-id, the traceparent when there is exactly one
 * (several are ambiguous), as the gRPC call layer reads its metadata; the
 * authorization values; what RFC 9112 says must be refused; the size of
 * the header fields, and of the query string (part of the target). */
typedef struct {
    const char *request_id, *traceparent, *authorization, *content_type, *transfer_encoding;
    size_t request_id_len, traceparent_len, authorization_len;
    size_t traceparents, authorizations, content_lengths, transfer_encodings;
    size_t header_bytes, query_bytes;
} request_headers;

static enum MHD_Result read_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                   size_t key_size, const char *value, size_t value_size)
{
    request_headers *h = cls;
    if (kind == MHD_GET_ARGUMENT_KIND) {
        h->query_bytes += key_size + 2 + (value ? value_size : 0); /* ?k=v& */
        return MHD_YES;
    }
    h->header_bytes += key_size + 4 + (value ? value_size : 0); /* k: v CR LF */
    if (!value) return MHD_YES;
    if (strcasecmp(key, REQUEST_ID_HEADER) == 0) {
        if (!h->request_id) h->request_id = value, h->request_id_len = value_size;
    } else if (strcasecmp(key, TRACEPARENT_HEADER) == 0) {
        if (h->traceparents++ == 0) h->traceparent = value, h->traceparent_len = value_size;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_AUTHORIZATION) == 0) {
        if (h->authorizations++ == 0) h->authorization = value, h->authorization_len = value_size;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) == 0) {
        h->content_lengths++;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING) == 0) {
        if (h->transfer_encodings++ == 0) h->transfer_encoding = value;
    } else if (strcasecmp(key, MHD_HTTP_HEADER_CONTENT_TYPE) == 0) {
        if (!h->content_type) h->content_type = value;
    }
    return MHD_YES;
}

/* A framing that RFC 9112 (6.1, 6.3) says to refuse: several
 * Content-Length headers, Content-Length beside Transfer-Encoding (the
 * ground of request smuggling), a transfer coding other than chunked
 * alone. The message says which; NULL when the framing is sound. */
static const char *framing_refused(const request_headers *h)
{
    if (h->content_lengths > 1) return "the request has several Content-Length headers";
    if (h->content_lengths && h->transfer_encodings)
        return "the request has both Content-Length and Transfer-Encoding";
    if (h->transfer_encodings > 1) return "the request has several Transfer-Encoding headers";
    if (h->transfer_encodings && strcasecmp(h->transfer_encoding, "chunked") != 0)
        return "the only transfer coding served is chunked";
    return NULL;
}

/* application/json, with any parameters (charset=utf-8) */
static bool is_json(const char *content_type)
{
    static const char json[] = "application/json";
    size_t n = sizeof json - 1;
    if (strncasecmp(content_type, json, n) != 0) return false;
    const char *rest = content_type + n;
    while (*rest == ' ' || *rest == '\t')
        rest++;
    return *rest == '\0' || *rest == ';';
}

static const char *method_of(const http_endpoint *ep)
{
    return ep->method ? ep->method : MHD_HTTP_METHOD_POST;
}

static const http_endpoint *find_endpoint(const http_server *s, const char *path)
{
    for (size_t i = 0; i < s->opt.n_endpoints; i++)
        if (strcmp(s->opt.endpoints[i]->path, path) == 0) return s->opt.endpoints[i];
    return NULL;
}

/* The headers are in: the exchange and its call, ended at once when the
 * request is refused. NULL when out of memory. */
static exchange *begin(http_server *s, struct MHD_Connection *conn, const char *url,
                       const char *method)
{
    exchange *ex = calloc(1, sizeof *ex);
    if (!ex) return NULL;
    ex->srv = s;
    ex->conn = conn;
    ex->ep = find_endpoint(s, url);
    pthread_mutex_init(&ex->mu, NULL);
    request_headers h = {0};
    MHD_get_connection_values_n(conn, MHD_HEADER_KIND | MHD_GET_ARGUMENT_KIND, read_header, &h);
    request_context_init(&ex->context, h.request_id, h.request_id_len,
                         h.traceparents == 1 ? h.traceparent : NULL,
                         h.traceparents == 1 ? h.traceparent_len : 0);
    char name[128];
    snprintf(name, sizeof name, "%s %s", method, url);
    call_sink sink = {.on_end = on_end, .ctx = ex};
    ex->c = call_open(ex->ep ? &ex->ep->handler : NULL, name, &ex->context, &sink);
    if (!ex->c) {
        pthread_mutex_destroy(&ex->mu);
        free(ex);
        return NULL;
    }
    rpc_status st;
    const char *length =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char *framing = framing_refused(&h);
    if (framing) {
        /* where this request ends is in doubt: answer it and read no more */
        ex->close = true;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "malformed_request", NULL,
                       "%s (RFC 9112)", framing);
        call_finish(ex->c, &st);
    } else if (strlen(url) + h.query_bytes > MAX_URI_BYTES) {
        ex->close = true;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "uri_too_long", NULL,
                       "the request target is longer than %zu bytes", MAX_URI_BYTES);
        call_finish(ex->c, &st);
    } else if (h.header_bytes > MAX_HEADER_BYTES) {
        ex->close = true;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "headers_too_large", NULL,
                       "the request's header fields take more than %zu bytes", MAX_HEADER_BYTES);
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
    } else if (strcmp(method, method_of(ex->ep)) != 0) {
        rpc_status_set(&st, GRPC_STATUS_UNIMPLEMENTED, "method_not_allowed", NULL,
                       "%s takes %s, not %.16s", ex->ep->path, method_of(ex->ep), method);
        call_finish(ex->c, &st);
    } else if (h.content_type && !is_json(h.content_type)) {
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "unsupported_media_type", NULL,
                       "%s takes a JSON body: Content-Type application/json (or none)",
                       ex->ep->path);
        call_finish(ex->c, &st);
    } else if (length) {
        expect_body(ex, length);
    }
    return ex;
}

static void on_hangup(void *arg)
{
    exchange *ex = arg;
    call_cancel(ex->c); /* the end follows: the work stops at its next check */
}

/* The body is complete: the endpoint's work starts, and the connection
 * waits for its end, suspended. Whether the answer is ready now. */
static bool run(exchange *ex, struct MHD_Connection *conn)
{
    static char empty[1];
    ex->ran = true;
    ex->ep->on_body(ex->c, ex->body ? ex->body : empty, ex->len);
    /* the request has been read into its own structures */
    free(ex->body);
    ex->body = NULL;
    ex->len = ex->cap = 0;
    release(ex);
    pthread_mutex_lock(&ex->mu);
    bool done = ex->ended;
    if (!done) {
        /* suspended before on_end can see suspended and resume */
        ex->suspended = true;
        http_listener_wait(ex->srv->listener, conn, on_hangup, ex);
    }
    pthread_mutex_unlock(&ex->mu);
    return done;
}

static enum MHD_Result answer(struct MHD_Connection *conn, exchange *ex)
{
    pthread_mutex_lock(&ex->mu);
    char *text = ex->answer;
    size_t len = ex->answer_len;
    unsigned status = ex->status;
    ex->answer = NULL;
    pthread_mutex_unlock(&ex->mu);
    struct MHD_Response *r =
        text ? MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE)
             : MHD_create_response_from_buffer(sizeof OUT_OF_MEMORY - 1, (void *)OUT_OF_MEMORY,
                                               MHD_RESPMEM_PERSISTENT);
    if (!r) {
        free(text);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
    MHD_add_response_header(r, REQUEST_ID_HEADER, ex->context.request_id);
    if (status == MHD_HTTP_UNAUTHORIZED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW,
                                ex->ep ? method_of(ex->ep) : MHD_HTTP_METHOD_POST);
    if (status == MHD_HTTP_TOO_MANY_REQUESTS || status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, "1");
    /* a server that is draining or not ready closes the connection after
     * its 503, so that no client sends the next request on it; a request
     * whose framing is in doubt ends its connection too */
    if (ex->close || status == MHD_HTTP_SERVICE_UNAVAILABLE)
        MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    (void)version;
    exchange *ex = *req_cls;
    if (!ex) {
        if (!(ex = begin(cls, conn, url, method))) return MHD_NO;
        *req_cls = ex;
        return ended(ex) ? answer(conn, ex) : MHD_YES;
    }
    if (*upload_data_size) {
        if (!ended(ex)) receive(ex, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return ended(ex) ? answer(conn, ex) : MHD_YES;
    }
    if (!ex->ran && !ended(ex) && !run(ex, conn)) return MHD_YES;
    return answer(conn, ex);
}

/* The request is over, answered or not (the client gone, the server
 * stopping): a call that never started its work ends CANCELLED, and one
 * whose answer did not go out whole is logged as such. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)cls, (void)conn;
    exchange *ex = *req_cls;
    if (!ex) return;
    if (ended(ex) && toe != MHD_REQUEST_TERMINATED_COMPLETED_OK) {
        call_answer_lost(ex->c);
    } else if (!ended(ex)) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_CANCELLED, NULL, NULL,
                       "the connection closed before the request was complete");
        call_cancel(ex->c);
        call_finish(ex->c, &st);
    }
    call_unref(ex->c);
    free(ex->answer);
    free(ex->body);
    release(ex);
    pthread_mutex_destroy(&ex->mu);
    free(ex);
    *req_cls = NULL;
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
    atomic_init(&s->receiving, 0);
    bool tls = opt->tls_cert && opt->tls_cert[0];
    lms_status st = LMS_OK;
    if (tls && MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES)
        st = lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "http-listen",
                      "this libmicrohttpd cannot serve TLS: --http-listen with --tls-cert needs "
                      "one built with GnuTLS");
    if (st == LMS_OK && tls) st = tls_read_pair(opt->tls_cert, opt->tls_key, &s->pem, err);
    if (st == LMS_OK && !(s->refusal = refusal_json()))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    const http_listener_options lo = {.address = opt->listen,
                                      .flag = "http-listen",
                                      .name = "HTTP server",
                                      .limits = {.max_connections = opt->max_connections,
                                                 .max_per_peer = opt->max_per_peer,
                                                 .header_ms = opt->header_timeout_ms,
                                                 .body_min_rate = opt->body_min_rate},
                                      .threads = HTTP_THREADS,
                                      .tls_key = tls ? s->pem.key : NULL,
                                      .tls_cert = tls ? s->pem.cert : NULL,
                                      .refusal = s->refusal,
                                      .refusal_type = "application/json",
                                      .memory_limit = CONNECTION_BYTES,
                                      .handler = on_request,
                                      .completed = on_completed,
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
