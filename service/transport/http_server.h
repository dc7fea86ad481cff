/*
 * http_server.h — the HTTP/1.1 door of the daemon (--http-listen): JSON
 * endpoints served by http_listener (the daemon's own HTTP/1.1 server, on a
 * few threads, within its limits and deadlines), TLS when the daemon has a certificate. Each
 * request to an endpoint is a call of the call layer (call_open): counted, metered, logged,
 * admitted, drained and ended like a gRPC call, and its work goes through the same path as a gRPC
 * Score. The server owns what HTTP alone has: routing, the API key header, the body (refused past
 * the size limit before it is read, and within a budget of memory for every body being received),
 * waiting for the call's end while watching for the client to go away (which cancels the call), and
 * the answer (the endpoint's JSON, or the status as JSON: http_status.h).
 */
#ifndef LMSCORED_HTTP_SERVER_H
#define LMSCORED_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "api_keys.h"
#include "call.h"
#include "json_writer.h"
#include "lmscore.h"

/* One endpoint: METHOD path. Its calls are calls of handler (whose path
 * names it in metrics, e.g. "/http/score", whose ctx is the endpoint's
 * own context, for call_ctx, and whose open flag serves it without an API
 * key). */
typedef struct {
    const char *path;   /* "/v1/score" */
    const char *method; /* "GET"; NULL: POST */
    bool under;         /* path ends with a {name} segment that matches any
                           ("/v1/models/{id}" serves /v1/models/ID) */
    call_handler handler;
    /* The whole body (len bytes, NUL-terminated, valid only during the
     * call; empty for a GET): start the call's work, or end the call
     * saying why not. */
    void (*on_body)(call *c, const char *body, size_t len);
    /* A successful call's reply as the JSON answer (reply NULL for a call
     * ended OK without one). */
    void (*render)(call *c, const ProtobufCMessage *reply, json_writer *w);
    /* Optional: an error's field in the endpoint's own terms, when its
     * request becomes a ScoreRequest of other names. */
    void (*name_fields)(rpc_status *st);
} http_endpoint;

typedef struct {
    const char *listen;   /* HOST:PORT; port 0 picks one */
    const char *tls_cert; /* PEM file paths, both empty for plaintext */
    const char *tls_key;
    int64_t max_body_bytes;     /* a larger body is refused: 413 message_too_large */
    int64_t max_receive_buffer; /* the bodies being received, all together */
    int max_connections;
    int max_per_peer;          /* connections from one address */
    int64_t header_timeout_ms; /* see http_listener.h: header_ms */
    int64_t body_min_rate;     /* bytes a second */
    const api_keys *keys;      /* NULL: none needed */
    const char *cors_origins;  /* ORIGIN[,ORIGIN...] or "*"; NULL or "": no CORS */
    const http_endpoint *const *endpoints;
    size_t n_endpoints;
} http_options;

typedef struct http_server http_server;

lms_status http_server_start(const http_options *opt, http_server **out, lms_error *err);
int http_server_port(const http_server *s);
/* Closes the listening socket and every connection: the calls they wait
 * for must have ended (call_layer_end_all).
 * NULL is a no-op. */
void http_server_stop(http_server *s);

#endif
