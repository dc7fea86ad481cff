/*
 * call.c — call state over the gRPC core API: the op batches of each call
 * shape, flow-controlled sends, status with details, reference counting.
 * See call.h for the contract.
 */
#include "call.h"

#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/support/time.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "decode_budget.h"
#include "log.h"
#include "metrics.h"
#include "proto_wire.h"
#include "request_context.h"

typedef struct {
    cq_tag base;
    call *owner;
} call_tag;

/* A message waiting behind the one in flight (call_send_queued). */
typedef struct queued_message {
    grpc_byte_buffer *buf;
    struct queued_message *next;
} queued_message;

/* What differs between the doors, said once: a call of the gRPC server
 * (call_accept) ends by op batches on its grpc_call and may stream; a local
 * one (call_open, the HTTP API's) ends into its sink and does not stream. */
typedef struct {
    void (*finish)(call *c, const rpc_status *st);
    void (*reply)(call *c, const ProtobufCMessage *msg);
    /* Sends msg now, or queues it behind the message in flight when queue. */
    call_send_result (*send)(call *c, const ProtobufCMessage *msg, bool queue);
    void (*release)(call *c); /* what the door holds, on destroy */
} call_ops;

struct call {
    const call_ops *ops;
    grpc_call *gc;  /* a gRPC call's */
    call_sink sink; /* a local call's */
    const call_handler *h;
    char method[128];
    int metrics_method;
    request_context context;
    grpc_metadata request_id_metadata; /* the response's x-request-id */
    gpr_timespec deadline;             /* GPR_CLOCK_MONOTONIC */
    gpr_timespec started;
    void *state;
    atomic_int refs;
    atomic_bool cancelled;
    atomic_bool lost;  /* call_open'ed: its answer never reached the client */
    atomic_bool ended; /* mirrors finished, for call_should_stop */

    pthread_mutex_t mu; /* guards everything below */
    bool initial_metadata_sent;
    bool send_in_flight;
    bool finished; /* call_finish/call_reply ran */
    bool admitted; /* counted by call_admit, until the status is sent */
    bool counted;  /* the outcome is in the metrics: outcome, took_ns */
    grpc_status_code outcome;
    int64_t took_ns;
    bool status_pending; /* the status waits for the messages in flight and queued */
    bool closed;         /* RECV_CLOSE_ON_SERVER completed */
    int close_cancelled; /* its out-parameter */
    grpc_byte_buffer *recv_buf;
    grpc_byte_buffer *send_buf;
    queued_message *queue_head, *queue_tail;
    int queued;
    grpc_byte_buffer *reply_buf; /* the unary response, sent with the status */
    rpc_status status;
    grpc_slice status_text;
    grpc_slice details_key, details_value;
    grpc_metadata trailing;

    call_tag recv_tag, send_tag, status_tag, close_tag;
    struct call *live_prev, *live_next; /* in g_live, under its mu */
};

static int64_t g_max_message_bytes = INT64_MAX;
/* What decoding one request message may allocate (see call_layer_init). */
static int64_t g_max_decoded_bytes = INT64_MAX;

/* Every call from call_accept to its destruction, so that a shutdown can
 * wait for the calls rather than for the connections. */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t none_left; /* CLOCK_MONOTONIC */
    call *head;
    size_t count;
} g_live = {.mu = PTHREAD_MUTEX_INITIALIZER};

static atomic_int g_admitted;
static _Atomic int64_t g_last_end_ns; /* monotonic; 0: none yet */
static atomic_bool g_log_every_call;

void call_layer_init(int64_t max_message_bytes)
{
    g_max_message_bytes = max_message_bytes;
    g_max_decoded_bytes = decode_budget_limit(max_message_bytes);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&g_live.none_left, &attr);
    pthread_condattr_destroy(&attr);
}

static void live_add(call *c)
{
    pthread_mutex_lock(&g_live.mu);
    c->live_next = g_live.head;
    if (g_live.head) g_live.head->live_prev = c;
    g_live.head = c;
    g_live.count++;
    pthread_mutex_unlock(&g_live.mu);
}

static void live_remove(call *c)
{
    pthread_mutex_lock(&g_live.mu);
    if (c->live_prev)
        c->live_prev->live_next = c->live_next;
    else
        g_live.head = c->live_next;
    if (c->live_next) c->live_next->live_prev = c->live_prev;
    if (--g_live.count == 0) pthread_cond_broadcast(&g_live.none_left);
    pthread_mutex_unlock(&g_live.mu);
}

/* A reference to c unless it is already being destroyed. */
static bool try_ref(call *c)
{
    int n = atomic_load(&c->refs);
    while (n > 0)
        if (atomic_compare_exchange_weak(&c->refs, &n, n + 1)) return true;
    return false;
}

void call_layer_end_all(const rpc_status *st)
{
    for (;;) {
        call *next = NULL;
        pthread_mutex_lock(&g_live.mu);
        for (call *c = g_live.head; c && !next; c = c->live_next)
            if (!atomic_load(&c->ended) && try_ref(c)) next = c;
        pthread_mutex_unlock(&g_live.mu);
        if (!next) return;
        call_finish(next, st);
        call_unref(next);
    }
}

int64_t call_layer_last_end_ns(void)
{
    return atomic_load(&g_last_end_ns);
}

void call_layer_log_every_call(void)
{
    atomic_store(&g_log_every_call, true);
}

int call_layer_admitted(void)
{
    return atomic_load(&g_admitted);
}

size_t call_layer_wait_idle(int64_t timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += timeout_ms / 1000;
    until.tv_nsec += (timeout_ms % 1000) * 1000000;
    if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    pthread_mutex_lock(&g_live.mu);
    int timed_out = 0;
    while (g_live.count > 0 && !timed_out)
        timed_out = pthread_cond_timedwait(&g_live.none_left, &g_live.mu, &until);
    size_t left = g_live.count;
    pthread_mutex_unlock(&g_live.mu);
    return left;
}

void *call_ctx(const call *c)
{
    return c->h ? c->h->ctx : NULL;
}

void *call_state(const call *c)
{
    return c->state;
}

void call_set_state(call *c, void *state)
{
    c->state = state;
}

const char *call_request_id(const call *c)
{
    return c->context.request_id;
}

const char *call_method(const call *c)
{
    return c->method;
}

int call_metrics_method(const call *c)
{
    return c->metrics_method;
}

void call_log_begin(log_record *r, const call *c, int priority, const char *message)
{
    log_begin(r, priority, message);
    log_str(r, "method", c->method);
    request_context_log(r, &c->context);
}

void call_ref(call *c)
{
    atomic_fetch_add(&c->refs, 1);
}

bool call_deadline_passed(const call *c)
{
    return gpr_time_cmp(gpr_now(GPR_CLOCK_MONOTONIC), c->deadline) >= 0;
}

bool call_should_stop(const call *c)
{
    return atomic_load(&c->cancelled) || atomic_load(&c->ended) || call_deadline_passed(c);
}

/* Caller holds c->mu (or the last reference). */
static void leave_admitted_locked(call *c)
{
    if (!c->admitted) return;
    c->admitted = false;
    if (c->h->counts_as_scoring) metrics_scoring_call_leave();
    atomic_fetch_sub(&g_admitted, 1);
}

void call_admit(call *c)
{
    pthread_mutex_lock(&c->mu);
    if (!c->admitted && !c->finished) {
        c->admitted = true;
        atomic_fetch_add(&g_admitted, 1);
        if (c->h->counts_as_scoring) metrics_scoring_call_enter();
    }
    pthread_mutex_unlock(&c->mu);
}

void call_stopped_status(const call *c, rpc_status *st)
{
    if (call_deadline_passed(c))
        rpc_status_set(st, GRPC_STATUS_DEADLINE_EXCEEDED, NULL, NULL, "deadline exceeded");
    else
        rpc_status_set(st, GRPC_STATUS_CANCELLED, NULL, NULL, "call cancelled");
}

/* Frees the messages waiting to be sent. Caller holds mu. */
static void drop_queue_locked(call *c)
{
    while (c->queue_head) {
        queued_message *q = c->queue_head;
        c->queue_head = q->next;
        grpc_byte_buffer_destroy(q->buf);
        free(q);
    }
    c->queue_tail = NULL;
    c->queued = 0;
}

/* Puts the call's outcome in the metrics, once. A call its client or
 * deadline stopped carries no reason of ours. Caller holds mu (or the last
 * reference). */
static void count_outcome_locked(call *c, grpc_status_code code)
{
    if (c->counted) return;
    c->counted = true;
    c->outcome = code;
    gpr_timespec took = gpr_time_sub(gpr_now(GPR_CLOCK_MONOTONIC), c->started);
    c->took_ns = (int64_t)took.tv_sec * 1000000000 + took.tv_nsec;
    metrics_call_finished(c->metrics_method, code, code == c->status.code ? c->status.reason : "",
                          c->took_ns);
}

/* The outcome a call is counted with: what its client or deadline made of
 * it when either stopped it, else `decided`, the status it was given
 * (UNKNOWN for a call that never ended). */
static grpc_status_code outcome_of(const call *c, grpc_status_code decided)
{
    if (!atomic_load(&c->cancelled)) return decided;
    return call_deadline_passed(c) ? GRPC_STATUS_DEADLINE_EXCEEDED : GRPC_STATUS_CANCELLED;
}

/* The end of a call: counted when it ended (end_call, end_local), so that a
 * client holding the answer, or a reader that sees no call in flight, finds
 * it in the counters; counted here for a call that never ended. */
static void destroy(call *c)
{
    count_outcome_locked(c, outcome_of(c, c->finished ? c->status.code : GRPC_STATUS_UNKNOWN));
    grpc_status_code code = c->outcome;
    const char *reason = code == c->status.code ? c->status.reason : "";
    leave_admitted_locked(c); /* no lock needed: the last reference is gone */
    live_remove(c);

    log_record r;
    call_log_begin(&r, c, atomic_load(&g_log_every_call) ? LOG_INFO : LOG_DEBUG, "call finished");
    /* the log tells what the client got: nothing, for a lost answer */
    bool lost = atomic_load(&c->lost) && code != GRPC_STATUS_CANCELLED;
    log_str(&r, "code", metrics_code_name(lost ? GRPC_STATUS_CANCELLED : code));
    if (lost) log_str(&r, "unsent", metrics_code_name(code));
    log_ms(&r, "ms", c->took_ns);
    if (code != GRPC_STATUS_OK && reason[0]) log_str(&r, "reason", reason);
    log_end(&r);

    if (c->state && c->h && c->h->free_state) c->h->free_state(c->state);
    if (c->recv_buf) grpc_byte_buffer_destroy(c->recv_buf);
    c->ops->release(c);
    drop_queue_locked(c); /* the last reference is gone: no lock needed */
    pthread_mutex_destroy(&c->mu);
    free(c);
}

void call_unref(call *c)
{
    if (atomic_fetch_sub(&c->refs, 1) == 1) destroy(c);
}

/* Starts a batch holding a reference for it. A batch refused by the core
 * (which only happens for a programming error in the op sequence) is
 * logged and completes nothing, so the reference is given back. */
static bool start(call *c, const grpc_op *ops, size_t n, call_tag *tag)
{
    call_ref(c);
    grpc_call_error e = grpc_call_start_batch(c->gc, ops, n, tag, NULL);
    if (e == GRPC_CALL_OK) return true;
    log_record r;
    call_log_begin(&r, c, LOG_ERR, "grpc_call_start_batch refused a batch");
    log_str(&r, "error", grpc_call_error_to_string(e));
    log_end(&r);
    atomic_fetch_sub(&c->refs, 1); /* the caller still holds one */
    return false;
}

static size_t add_initial_metadata(call *c, grpc_op *ops, size_t n)
{
    if (c->initial_metadata_sent) return n;
    c->initial_metadata_sent = true;
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = 1;
    ops[n].data.send_initial_metadata.metadata = &c->request_id_metadata;
    return n + 1;
}

/* Sends the status (and the unary reply, if any). Caller holds mu. */
static void start_status_locked(call *c)
{
    grpc_op ops[3];
    size_t n = add_initial_metadata(c, ops, 0);
    if (c->reply_buf) {
        memset(&ops[n], 0, sizeof ops[n]);
        ops[n].op = GRPC_OP_SEND_MESSAGE;
        ops[n].data.send_message.send_message = c->reply_buf;
        n++;
    }
    c->status_text = grpc_slice_from_copied_string(c->status.message);
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_STATUS_FROM_SERVER;
    ops[n].data.send_status_from_server.status = c->status.code;
    ops[n].data.send_status_from_server.status_details = &c->status_text;
    if (c->status.code != GRPC_STATUS_OK && c->status.reason[0]) {
        c->details_key = grpc_slice_from_static_string(STATUS_DETAILS_KEY);
        c->details_value = status_details_encode(&c->status);
        c->trailing.key = c->details_key;
        c->trailing.value = c->details_value;
        ops[n].data.send_status_from_server.trailing_metadata_count = 1;
        ops[n].data.send_status_from_server.trailing_metadata = &c->trailing;
    }
    n++;
    start(c, ops, n, &c->status_tag);
}

static void on_status_done(cq_tag *tag, bool ok)
{
    call *c = ((call_tag *)tag)->owner;
    (void)ok; /* a failed status send means the client is gone: on_close says so */
    if (c->reply_buf) grpc_byte_buffer_destroy(c->reply_buf);
    c->reply_buf = NULL;
    grpc_slice_unref(c->status_text);
    if (c->status.code != GRPC_STATUS_OK && c->status.reason[0]) {
        grpc_slice_unref(c->details_key);
        grpc_slice_unref(c->details_value);
    }
    call_unref(c);
}

/* The first end of a call, whichever kind: its status kept, its outcome
 * counted (CANCELLED or DEADLINE_EXCEEDED when its client or deadline
 * stopped it first) before its admission ends, so that a reader that sees
 * no call in flight sees this one counted. Caller holds mu. */
static void mark_ended_locked(call *c, const rpc_status *st)
{
    c->finished = true;
    atomic_store(&c->ended, true);
    atomic_store(&g_last_end_ns, monotonic_ns());
    c->status = *st;
    count_outcome_locked(c, outcome_of(c, st->code));
    leave_admitted_locked(c);
}

/* Ends a call_open'ed call: st and reply (NULL unless OK) go to its sink.
 * Only the first end counts. */
static void end_local(call *c, const rpc_status *st, const ProtobufCMessage *reply)
{
    pthread_mutex_lock(&c->mu);
    bool first = !c->finished;
    if (first) mark_ended_locked(c, st);
    pthread_mutex_unlock(&c->mu);
    if (first) c->sink.on_end(c, c->sink.ctx, st, reply);
}

/* Ends the call with st, sending reply (if any) with the status, after
 * the message in flight. Only the first end counts. */
static void end_call(call *c, const rpc_status *st, grpc_byte_buffer *reply)
{
    pthread_mutex_lock(&c->mu);
    if (c->finished) {
        pthread_mutex_unlock(&c->mu);
        if (reply) grpc_byte_buffer_destroy(reply);
        return;
    }
    mark_ended_locked(c, st);
    c->reply_buf = reply;
    /* An answer comes after every message before it; a failure need not. */
    if (st->code != GRPC_STATUS_OK) drop_queue_locked(c);
    if (c->send_in_flight)
        c->status_pending = true;
    else
        start_status_locked(c);
    pthread_mutex_unlock(&c->mu);
}

void call_answer_lost(call *c)
{
    atomic_store(&c->lost, true);
}

void call_finish(call *c, const rpc_status *st)
{
    c->ops->finish(c, st);
}

static void grpc_finish(call *c, const rpc_status *st)
{
    end_call(c, st, NULL);
}

static void local_finish(call *c, const rpc_status *st)
{
    end_local(c, st, NULL);
}

/* True when msg is within the send limit; else the call is finished with
 * RESOURCE_EXHAUSTED. */
static bool within_limit(call *c, const ProtobufCMessage *msg, size_t *len)
{
    *len = protobuf_c_message_get_packed_size(msg);
    if ((int64_t)*len <= g_max_message_bytes) return true;
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "response_too_large", NULL,
                   "the response (%zu bytes) exceeds the server's max message size (%lld "
                   "bytes); score fewer items per call or use ScoreStream",
                   *len, (long long)g_max_message_bytes);
    call_finish(c, &st);
    return false;
}

/* Serializes msg into a byte buffer; NULL (and the call finished with
 * RESOURCE_EXHAUSTED) when it exceeds the send limit. */
static grpc_byte_buffer *pack(call *c, const ProtobufCMessage *msg)
{
    size_t len;
    if (!within_limit(c, msg, &len)) return NULL;
    grpc_slice s = grpc_slice_malloc(len);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(s));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&s, 1);
    grpc_slice_unref(s);
    return bb;
}

void call_reply(call *c, const ProtobufCMessage *msg)
{
    c->ops->reply(c, msg);
}

static void local_reply(call *c, const ProtobufCMessage *msg)
{
    size_t len;
    rpc_status ok;
    rpc_status_ok(&ok);
    if (within_limit(c, msg, &len)) end_local(c, &ok, msg);
}

static void grpc_reply(call *c, const ProtobufCMessage *msg)
{
    grpc_byte_buffer *bb = pack(c, msg);
    if (!bb) return;
    rpc_status ok;
    rpc_status_ok(&ok);
    end_call(c, &ok, bb);
}

static ProtobufCMessage *decode(const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                                size_t len, lms_error *err)
{
    decode_budget budget;
    decode_budget_init(&budget, g_max_decoded_bytes);
    ProtobufCAllocator alloc = decode_budget_allocator(&budget);
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, &alloc, len, msg);
    if (!m && budget.exceeded)
        lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, "message_too_large", NULL,
                 "the request message decodes to more than %lld bytes (it has too many "
                 "elements); send fewer items per call, or stream them with ScoreItems",
                 (long long)g_max_decoded_bytes);
    else if (!m)
        lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "malformed_request", NULL,
                 "the message is not a valid %s", desc->name);
    return m;
}

ProtobufCMessage *call_unpack(call *c, const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                              size_t len)
{
    lms_error err = {0};
    uint8_t *cleaned;
    size_t cleaned_len;
    ProtobufCMessage *m = NULL;
    if (proto_wire_check(desc, msg, len, &cleaned, &cleaned_len, &err) == LMS_OK) {
        m = cleaned ? decode(desc, cleaned, cleaned_len, &err) : decode(desc, msg, len, &err);
        free(cleaned);
    }
    if (!m) {
        rpc_status st;
        rpc_status_from_error(&st, &err);
        call_finish(c, &st);
    }
    return m;
}

/* Starts sending bb (taken over). Caller holds mu; nothing is in flight. */
static void start_send_locked(call *c, grpc_byte_buffer *bb)
{
    grpc_op ops[2];
    size_t n = add_initial_metadata(c, ops, 0);
    memset(&ops[n], 0, sizeof ops[n]);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n].data.send_message.send_message = bb;
    n++;
    c->send_buf = bb;
    c->send_in_flight = true;
    if (!start(c, ops, n, &c->send_tag)) {
        c->send_buf = NULL;
        c->send_in_flight = false;
        grpc_byte_buffer_destroy(bb);
    }
}

static void on_send_done(cq_tag *tag, bool ok)
{
    call *c = ((call_tag *)tag)->owner;
    pthread_mutex_lock(&c->mu);
    grpc_byte_buffer_destroy(c->send_buf);
    c->send_buf = NULL;
    c->send_in_flight = false;
    if (!ok) {
        atomic_store(&c->cancelled, true); /* the stream is broken */
        drop_queue_locked(c);
    }
    if (c->queue_head) {
        queued_message *q = c->queue_head;
        c->queue_head = q->next;
        if (!c->queue_head) c->queue_tail = NULL;
        c->queued--;
        start_send_locked(c, q->buf);
        free(q);
    }
    bool notify = !c->finished;
    if (c->status_pending && !c->send_in_flight) {
        c->status_pending = false;
        start_status_locked(c);
    }
    pthread_mutex_unlock(&c->mu);
    if (notify && ok && c->h->on_sent) c->h->on_sent(c);
    call_unref(c);
}

/* Sends msg now (CALL_SENT), or queues it behind the message in flight when
 * queue, else CALL_BUSY; CALL_CLOSED once the call is over. */
static call_send_result grpc_send(call *c, const ProtobufCMessage *msg, bool queue)
{
    grpc_byte_buffer *bb = pack(c, msg);
    if (!bb) return CALL_CLOSED;
    queued_message *q = queue ? malloc(sizeof *q) : NULL;
    pthread_mutex_lock(&c->mu);
    call_send_result res = CALL_SENT;
    if (c->finished || c->closed || atomic_load(&c->cancelled) || (queue && !q))
        res = CALL_CLOSED;
    else if (c->send_in_flight && !queue)
        res = CALL_BUSY;
    if (res == CALL_SENT && c->send_in_flight) {
        *q = (queued_message){.buf = bb};
        if (c->queue_tail)
            c->queue_tail->next = q;
        else
            c->queue_head = q;
        c->queue_tail = q;
        c->queued++;
        q = NULL;
    } else if (res == CALL_SENT) {
        start_send_locked(c, bb);
    } else {
        grpc_byte_buffer_destroy(bb);
    }
    pthread_mutex_unlock(&c->mu);
    free(q);
    return res;
}

static call_send_result local_send(call *c, const ProtobufCMessage *msg, bool queue)
{
    (void)c, (void)msg, (void)queue;
    return CALL_CLOSED; /* its one answer is call_reply's */
}

call_send_result call_send(call *c, const ProtobufCMessage *msg)
{
    return c->ops->send(c, msg, false);
}

call_send_result call_send_queued(call *c, const ProtobufCMessage *msg)
{
    return c->ops->send(c, msg, true);
}

int call_send_backlog(call *c)
{
    pthread_mutex_lock(&c->mu);
    int n = c->queued;
    pthread_mutex_unlock(&c->mu);
    return n;
}

static void on_recv_done(cq_tag *tag, bool ok)
{
    call *c = ((call_tag *)tag)->owner;
    grpc_byte_buffer *bb = c->recv_buf;
    c->recv_buf = NULL;
    if (!ok) {
        /* the call is gone; on_close reports it */
    } else if (bb && (int64_t)grpc_byte_buffer_length(bb) > g_max_message_bytes) {
        /* The core delivers any size (server.c lifts its limit) so that the
         * refusal can carry details; it has buffered the message either way. */
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "message_too_large", NULL,
                       "the request message (%zu bytes) exceeds the server's max message size "
                       "(%lld bytes); send fewer items per call, or stream them with ScoreItems",
                       grpc_byte_buffer_length(bb), (long long)g_max_message_bytes);
        call_finish(c, &st);
    } else if (bb) {
        grpc_byte_buffer_reader reader;
        if (grpc_byte_buffer_reader_init(&reader, bb)) {
            grpc_slice s = grpc_byte_buffer_reader_readall(&reader);
            grpc_byte_buffer_reader_destroy(&reader);
            c->h->on_message(c, GRPC_SLICE_START_PTR(s), GRPC_SLICE_LENGTH(s));
            grpc_slice_unref(s);
        } else {
            rpc_status st;
            rpc_status_set(&st, GRPC_STATUS_INTERNAL, NULL, NULL,
                           "could not read the request message");
            call_finish(c, &st);
        }
    } else if (c->h->shape == CALL_BIDI_STREAMING) {
        c->h->on_message(c, NULL, 0); /* half-close */
    } else {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "missing_request", NULL,
                       "the client sent no request message");
        call_finish(c, &st);
    }
    if (bb) grpc_byte_buffer_destroy(bb);
    call_unref(c);
}

void call_request_next(call *c)
{
    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_MESSAGE;
    op.data.recv_message.recv_message = &c->recv_buf;
    start(c, &op, 1, &c->recv_tag);
}

static void on_close_done(cq_tag *tag, bool ok)
{
    call *c = ((call_tag *)tag)->owner;
    pthread_mutex_lock(&c->mu);
    c->closed = true;
    bool cancelled = !ok || c->close_cancelled;
    if (cancelled) atomic_store(&c->cancelled, true);
    pthread_mutex_unlock(&c->mu);
    if (c->h && c->h->on_close) c->h->on_close(c, cancelled);
    call_unref(c);
}

/* The request context from the request's first x-request-id and its
 * traceparent; a repeated traceparent is ambiguous and counts as none. */
static void read_request_context(call *c, const grpc_metadata_array *md)
{
    const grpc_slice *request_id = NULL, *traceparent = NULL;
    int traceparents = 0;
    for (size_t i = 0; md && i < md->count; i++) {
        const grpc_metadata *m = &md->metadata[i];
        if (!request_id && grpc_slice_str_cmp(m->key, REQUEST_ID_HEADER) == 0)
            request_id = &m->value;
        else if (grpc_slice_str_cmp(m->key, TRACEPARENT_HEADER) == 0 && traceparents++ == 0)
            traceparent = &m->value;
    }
    if (traceparents > 1) traceparent = NULL;
    request_context_init(&c->context,
                         request_id ? (const char *)GRPC_SLICE_START_PTR(*request_id) : NULL,
                         request_id ? GRPC_SLICE_LENGTH(*request_id) : 0,
                         traceparent ? (const char *)GRPC_SLICE_START_PTR(*traceparent) : NULL,
                         traceparent ? GRPC_SLICE_LENGTH(*traceparent) : 0);
    /* a copy the core may keep a reference to, whatever it does with it */
    c->request_id_metadata.key = grpc_slice_from_static_string(REQUEST_ID_HEADER);
    c->request_id_metadata.value = grpc_slice_from_copied_string(c->context.request_id);
}

static void init_tag(call_tag *t, call *c, void (*done)(cq_tag *, bool))
{
    t->base.done = done;
    t->owner = c;
}

static void grpc_release(call *c)
{
    grpc_slice_unref(c->request_id_metadata.value);
    grpc_call_unref(c->gc);
}

static void local_release(call *c)
{
    (void)c; /* its sink's context is its opener's */
}

static const call_ops GRPC_CALL_OPS = {
    .finish = grpc_finish, .reply = grpc_reply, .send = grpc_send, .release = grpc_release};
static const call_ops LOCAL_CALL_OPS = {
    .finish = local_finish, .reply = local_reply, .send = local_send, .release = local_release};

/* A call with one reference (its creator's), counted live; NULL when out
 * of memory. */
static call *call_new(const call_ops *ops, const call_handler *h, const char *method,
                      gpr_timespec deadline)
{
    call *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->ops = ops;
    c->h = h;
    snprintf(c->method, sizeof c->method, "%s", method);
    c->metrics_method = metrics_method_index(h ? h->path : NULL);
    c->deadline = gpr_convert_clock_type(deadline, GPR_CLOCK_MONOTONIC);
    c->started = gpr_now(GPR_CLOCK_MONOTONIC);
    atomic_init(&c->refs, 1);
    atomic_init(&c->cancelled, false);
    atomic_init(&c->ended, false);
    pthread_mutex_init(&c->mu, NULL);
    live_add(c);
    metrics_request_started();
    return c;
}

void call_accept(grpc_call *gc, const call_handler *h, const char *method, gpr_timespec deadline,
                 const grpc_metadata_array *request_metadata, const rpc_status *refused)
{
    call *c = call_new(&GRPC_CALL_OPS, h, method, deadline);
    if (!c) {
        /* no memory to track the call: refuse it rather than lose it */
        grpc_call_cancel_with_status(gc, GRPC_STATUS_RESOURCE_EXHAUSTED, "out of memory", NULL);
        grpc_call_unref(gc);
        return;
    }
    c->gc = gc;
    read_request_context(c, request_metadata);
    init_tag(&c->recv_tag, c, on_recv_done);
    init_tag(&c->send_tag, c, on_send_done);
    init_tag(&c->status_tag, c, on_status_done);
    init_tag(&c->close_tag, c, on_close_done);

    grpc_op op;
    memset(&op, 0, sizeof op);
    op.op = GRPC_OP_RECV_CLOSE_ON_SERVER;
    op.data.recv_close_on_server.cancelled = &c->close_cancelled;
    start(c, &op, 1, &c->close_tag);

    if (refused) {
        call_finish(c, refused);
    } else if (!h) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_UNIMPLEMENTED, NULL, NULL, "unknown method %s", method);
        call_finish(c, &st);
    } else {
        call_request_next(c);
    }
    call_unref(c); /* the batches hold their own */
}

call *call_open(const call_handler *h, const char *method, const request_context *context,
                const call_sink *sink)
{
    call *c = call_new(&LOCAL_CALL_OPS, h, method, gpr_inf_future(GPR_CLOCK_MONOTONIC));
    if (c) {
        c->context = *context;
        c->sink = *sink;
    }
    return c;
}

void call_cancel(call *c)
{
    if (!atomic_exchange(&c->cancelled, true) && c->h && c->h->on_close) c->h->on_close(c, true);
}
