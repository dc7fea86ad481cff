/*
 * server.c — the gRPC core server, its completion queue and the one thread
 * that drains it. Every CQ tag is a cq_tag whose done() is the next step.
 */
#include "server.h"

#include <grpc/support/time.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "tls.h"

/* After the GOAWAY of a shutdown, the time clients have to stop sending
 * before their connections are closed: more than a round trip on any
 * network a replica sits in. */
#define GOAWAY_SETTLE_MS 50
/* A keepalive ping not answered within this closes its connection. */
#define KEEPALIVE_TIMEOUT_MS 20000
/* The time a new connection has to complete its TLS and HTTP/2 handshake. */
#define HANDSHAKE_TIMEOUT_MS 20000

/* Calls accepted concurrently: the core hands out a call only against an
 * outstanding request, so a few requests keep bursts from waiting. */
#define ACCEPT_SLOTS 16

typedef struct {
    cq_tag base;
    server *srv;
    grpc_call *call;
    grpc_call_details details;
    grpc_metadata_array metadata;
} accept_slot;

typedef struct {
    cq_tag base;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
} shutdown_tag;

struct server {
    grpc_server *grpc;
    grpc_completion_queue *cq;
    pthread_t cq_thread;
    bool cq_thread_started;
    int port;
    atomic_bool shutting_down;
    const call_handler *const *handlers;
    size_t n_handlers;
    const api_keys *keys;
    accept_slot slots[ACCEPT_SLOTS];
    shutdown_tag shutdown;
};

static void arm(accept_slot *slot)
{
    grpc_call_details_init(&slot->details);
    grpc_metadata_array_init(&slot->metadata);
    slot->call = NULL;
    grpc_server_request_call(slot->srv->grpc, &slot->call, &slot->details, &slot->metadata,
                             slot->srv->cq, slot->srv->cq, &slot->base);
}

static const call_handler *find_handler(const server *s, grpc_slice method)
{
    for (size_t i = 0; i < s->n_handlers; i++) {
        const char *path = s->handlers[i]->path;
        if (GRPC_SLICE_LENGTH(method) == strlen(path) &&
            memcmp(GRPC_SLICE_START_PTR(method), path, strlen(path)) == 0)
            return s->handlers[i];
    }
    return NULL;
}

/* The API key check of a call to h (NULL: an unknown method, which needs
 * a key too, so that a caller without one learns nothing of what is
 * served). True when the call may go on; else st says why not. */
static bool authorized(const server *s, const call_handler *h, const grpc_metadata_array *md,
                       rpc_status *st)
{
    static const char header[] = "authorization"; /* gRPC keys are lower case */
    if (!s->keys || (h && h->open)) return true;
    const grpc_slice *first = NULL;
    size_t n = 0;
    for (size_t i = 0; i < md->count; i++) {
        const grpc_slice *key = &md->metadata[i].key;
        if (GRPC_SLICE_LENGTH(*key) == sizeof header - 1 &&
            memcmp(GRPC_SLICE_START_PTR(*key), header, sizeof header - 1) == 0 && n++ == 0)
            first = &md->metadata[i].value;
    }
    return api_keys_check(s->keys, first ? (const char *)GRPC_SLICE_START_PTR(*first) : NULL,
                          first ? GRPC_SLICE_LENGTH(*first) : 0, n, st);
}

static void on_accept(cq_tag *tag, bool ok)
{
    accept_slot *slot = (accept_slot *)tag;
    server *s = slot->srv;
    if (ok && slot->call) {
        char method[128];
        size_t len = GRPC_SLICE_LENGTH(slot->details.method);
        if (len >= sizeof method) len = sizeof method - 1;
        memcpy(method, GRPC_SLICE_START_PTR(slot->details.method), len);
        method[len] = '\0';
        const call_handler *h = find_handler(s, slot->details.method);
        rpc_status refused;
        bool allowed = authorized(s, h, &slot->metadata, &refused);
        call_accept(slot->call, h, method, slot->details.deadline, &slot->metadata,
                    allowed ? NULL : &refused);
    }
    grpc_call_details_destroy(&slot->details);
    grpc_metadata_array_destroy(&slot->metadata);
    if (ok && !atomic_load(&s->shutting_down)) arm(slot);
}

static void on_shutdown(cq_tag *tag, bool ok)
{
    (void)ok;
    shutdown_tag *t = (shutdown_tag *)tag;
    pthread_mutex_lock(&t->mu);
    t->done = true;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
}

static void *cq_loop(void *arg)
{
    server *s = arg;
    for (;;) {
        grpc_event ev =
            grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
        if (ev.type == GRPC_QUEUE_SHUTDOWN) break;
        if (ev.type == GRPC_OP_COMPLETE) ((cq_tag *)ev.tag)->done(ev.tag, ev.success != 0);
    }
    return NULL;
}

#define SERVER_ARGS 12

static grpc_arg int_arg(const char *key, int64_t value)
{
    grpc_arg a = {.type = GRPC_ARG_INTEGER, .key = (char *)key};
    a.value.integer = value > INT_MAX ? INT_MAX : (int)value;
    return a;
}

/* 0 means "never" in the options, INT_MAX in gRPC's. */
static int64_t never_is_int_max(int64_t ms)
{
    return ms > 0 ? ms : INT_MAX;
}

static size_t channel_args_of(const server_options *opt, grpc_resource_quota *quota, grpc_arg *args)
{
    size_t n = 0;
    /* No receive limit in the core: the call layer enforces
     * max_message_bytes itself, with an ErrorInfo (message_too_large) that a
     * refusal by the core could not carry. The core checks a message's size
     * only once all of it has arrived, so this buffers nothing more. */
    args[n++] = int_arg(GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH, -1);
    args[n++] = int_arg(GRPC_ARG_MAX_SEND_MESSAGE_LENGTH, opt->max_message_bytes);
    /* A second daemon on a port in use must fail to bind, not share it. */
    args[n++] = int_arg(GRPC_ARG_ALLOW_REUSEPORT, 0);
    /* The connection policy (docs/operations.md). */
    args[n++] =
        int_arg(GRPC_ARG_MAX_CONNECTION_IDLE_MS, never_is_int_max(opt->connections.max_idle_ms));
    args[n++] =
        int_arg(GRPC_ARG_MAX_CONNECTION_AGE_MS, never_is_int_max(opt->connections.max_age_ms));
    args[n++] = int_arg(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, opt->connections.max_age_grace_ms);
    args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIME_MS, opt->connections.keepalive_time_ms);
    args[n++] = int_arg(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, KEEPALIVE_TIMEOUT_MS);
    /* Pings are allowed on a connection without calls (a client keeping
     * its connection through a load balancer warm), at the pace set. */
    args[n++] = int_arg(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
    args[n++] = int_arg(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS,
                        opt->connections.keepalive_min_time_ms);
    /* What gRPC may hold for requests still arriving: its deframer buffers a
     * message whole before anyone (its own limit included) can look at
     * the size, and the stream window opens to whatever size the message
     * announces. The quota bounds that memory: past it the transport
     * refuses a buffering stream (RESOURCE_EXHAUSTED) and closes idle
     * connections. */
    args[n].type = GRPC_ARG_POINTER;
    args[n].key = (char *)GRPC_ARG_RESOURCE_QUOTA;
    args[n].value.pointer.p = quota;
    args[n++].value.pointer.vtable = grpc_resource_quota_arg_vtable();
    /* A connection that never completes its handshake (or sends nothing at
     * all) is closed after this instead of gRPC's 120 s. */
    args[n++] = int_arg(GRPC_ARG_SERVER_HANDSHAKE_TIMEOUT_MS, HANDSHAKE_TIMEOUT_MS);
    return n;
}

lms_status server_start(const server_options *opt, const call_handler *const *handlers,
                        size_t n_handlers, server **out, lms_error *err)
{
    server *s = calloc(1, sizeof *s);
    if (!s) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    s->handlers = handlers;
    s->n_handlers = n_handlers;
    s->keys = opt->keys;
    pthread_mutex_init(&s->shutdown.mu, NULL);
    pthread_cond_init(&s->shutdown.cv, NULL);
    s->shutdown.base.done = on_shutdown;

    grpc_resource_quota *quota = grpc_resource_quota_create("lmscored");
    grpc_resource_quota_resize(quota, (size_t)opt->max_receive_buffer);
    grpc_arg args[SERVER_ARGS];
    grpc_channel_args channel_args = {.num_args = channel_args_of(opt, quota, args), .args = args};
    s->grpc = grpc_server_create(&channel_args, NULL);
    grpc_resource_quota_unref(quota); /* the server holds its own reference */
    s->cq = grpc_completion_queue_create_for_next(NULL);
    grpc_server_register_completion_queue(s->grpc, s->cq, NULL);

    lms_status st = LMS_OK;
    grpc_server_credentials *creds = tls_server_credentials(opt->tls_cert, opt->tls_key, err);
    if (!creds) {
        st = err ? err->status : LMS_ERR_IO;
    } else {
        s->port = grpc_server_add_http2_port(s->grpc, opt->listen, creds);
        grpc_server_credentials_release(creds);
        if (s->port == 0)
            st = lms_fail(err, LMS_ERR_IO, "bind_failed", "listen", "cannot listen on %s",
                          opt->listen);
    }
    if (st != LMS_OK) {
        server_shutdown(s, NULL, 0);
        server_destroy(s);
        return st;
    }

    grpc_server_start(s->grpc);
    for (int i = 0; i < ACCEPT_SLOTS; i++) {
        s->slots[i].base.done = on_accept;
        s->slots[i].srv = s;
        arm(&s->slots[i]);
    }
    if (pthread_create(&s->cq_thread, NULL, cq_loop, s) != 0) {
        server_shutdown(s, NULL, 0);
        server_destroy(s);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "cannot start the completion queue thread");
    }
    s->cq_thread_started = true;
    *out = s;
    return LMS_OK;
}

int server_port(const server *s)
{
    return s->port;
}

/* Waits up to ms (forever when negative) for the core's shutdown; true
 * once it is done. */
static bool wait_shutdown(server *s, int64_t ms)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / 1000;
    until.tv_nsec += (ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&s->shutdown.mu);
    int timed_out = 0;
    while (!s->shutdown.done && !timed_out)
        timed_out = ms < 0 ? pthread_cond_wait(&s->shutdown.cv, &s->shutdown.mu)
                           : pthread_cond_timedwait(&s->shutdown.cv, &s->shutdown.mu, &until);
    bool done = s->shutdown.done;
    pthread_mutex_unlock(&s->shutdown.mu);
    return done;
}

void server_shutdown(server *s, const rpc_status *end_with, int64_t grace_ms)
{
    atomic_store(&s->shutting_down, true);
    if (!s->cq_thread_started) {
        /* startup failed: no CQ thread, so run the remaining tags here */
        grpc_server_shutdown_and_notify(s->grpc, s->cq, &s->shutdown.base);
        while (!s->shutdown.done) {
            grpc_event ev =
                grpc_completion_queue_next(s->cq, gpr_inf_future(GPR_CLOCK_MONOTONIC), NULL);
            ((cq_tag *)ev.tag)->done(ev.tag, ev.success != 0);
        }
        return;
    }
    call_layer_end_all(end_with);
    size_t left = call_layer_wait_idle(grace_ms);
    if (left > 0) {
        log_record r;
        log_begin(&r, LOG_WARNING, "calls still running after the grace period: cancelling them");
        log_int(&r, "calls", (int64_t)left);
        log_end(&r);
    }
    /* The core's shutdown sends every connection a GOAWAY, then waits for
     * the clients to hang up, idle ones included; after GOAWAY_SETTLE_MS the
     * connections left are closed. Without the GOAWAY first, grpcio 1.51
     * clients were seen to hang past their deadlines on a stream started as
     * the connection went. The cost: a call that a client sent while the
     * GOAWAY travelled is cancelled by the core without details (it cancels
     * every call reaching it once shutdown began); the drain before waits
     * for the clients to stop calling. */
    grpc_server_shutdown_and_notify(s->grpc, s->cq, &s->shutdown.base);
    if (!wait_shutdown(s, GOAWAY_SETTLE_MS)) grpc_server_cancel_all_calls(s->grpc);
    wait_shutdown(s, -1);
}

void server_destroy(server *s)
{
    grpc_server_destroy(s->grpc);
    grpc_completion_queue_shutdown(s->cq);
    if (s->cq_thread_started) pthread_join(s->cq_thread, NULL);
    grpc_completion_queue_destroy(s->cq);
    pthread_mutex_destroy(&s->shutdown.mu);
    pthread_cond_destroy(&s->shutdown.cv);
    free(s);
}
