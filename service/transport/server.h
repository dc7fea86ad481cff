/*
 * server.h — the gRPC server and its completion-queue thread: binds the
 * listen address (TLS when given a certificate), accepts calls and hands
 * each to its method's handler through the call layer.
 */
#ifndef LMSCORED_SERVER_H
#define LMSCORED_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "api_keys.h"
#include "call.h"
#include "lmscore.h"

/* How long connections may live and idle, and how they are kept alive
 * (the flags of the same names; see docs/operations.md). */
typedef struct {
    int64_t max_idle_ms; /* 0: never */
    int64_t max_age_ms;  /* 0: never */
    int64_t max_age_grace_ms;
    int64_t keepalive_time_ms;
    int64_t keepalive_min_time_ms; /* the fastest a client may ping */
} connection_policy;

typedef struct {
    const char *listen;   /* host:port; port 0 picks one */
    const char *tls_cert; /* PEM file paths, both NULL/empty for plaintext */
    const char *tls_key;
    int64_t max_message_bytes;  /* sent; received ones are the call layer's check */
    int64_t max_receive_buffer; /* gRPC's memory for requests still arriving */
    connection_policy connections;
    const api_keys *keys; /* NULL: no API keys; else every handler but the open ones needs one */
} server_options;

typedef struct server server;

/* Binds, starts the server and its CQ thread. handlers: the methods served. */
lms_status server_start(const server_options *opt, const call_handler *const *handlers,
                        size_t n_handlers, server **out, lms_error *err);
int server_port(const server *s);
/* Stops accepting calls, ends every call still running with end_with,
 * waits up to grace_ms for them to be over (those left are cancelled),
 * closes every connection and stops listening. Returns once the core is
 * done. end_with may be NULL before any call was accepted. */
void server_shutdown(server *s, const rpc_status *end_with, int64_t grace_ms);
/* After server_shutdown: joins the CQ thread and frees everything. */
void server_destroy(server *s);

#endif
