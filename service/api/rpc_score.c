/*
 * rpc_score.c — Score, ScoreStream and ScoreItems as gRPC handlers: decode
 * a request on the CQ thread and hand it to the scoring call (score_call.h),
 * which queues it to the pool (a full queue is RESOURCE_EXHAUSTED), checks,
 * tokenizes and scores it on a worker and streams results with
 * back-pressure.
 *
 * ScoreItems runs its stream as a chain of jobs, one at a time: the header
 * (query and labels prepared, and the query prefilled once into an engine
 * session), then one job per item batch, scored against that session a
 * chunk at a time. At most one received batch waits behind the running
 * job; the next message is read only when that slot is free, so a fast
 * client is throttled to the engine's pace and the server holds a bounded
 * number of items per stream.
 */
#include "rpc_score.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "score_call.h"
#include "score_request.h"

/* ---- Score and ScoreStream -------------------------------------------------- */

static void score_stream_free(void *state)
{
    service_gate *gate = state;
    service_gate_destroy(gate);
    free(gate);
}

static void on_score_message(call *c, const uint8_t *msg, size_t len, bool stream)
{
    service *svc = call_ctx(c);
    service_gate *gate = NULL;
    if (stream) {
        gate = malloc(sizeof *gate);
        if (!gate) {
            rpc_status st;
            rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
            call_finish(c, &st);
            return;
        }
        service_gate_init(gate);
        call_set_state(c, gate);
    }
    lms_engine *engine;
    ProtobufCMessage *req =
        service_begin(svc, c, &lmscore__v1__score_request__descriptor, msg, len, &engine);
    if (req) score_call_submit(svc, c, engine, (Lmscore__V1__ScoreRequest *)req, gate);
}

static void on_score(call *c, const uint8_t *msg, size_t len)
{
    on_score_message(c, msg, len, false);
}

static void on_score_stream(call *c, const uint8_t *msg, size_t len)
{
    on_score_message(c, msg, len, true);
}

/* ---- ScoreItems ------------------------------------------------------------- */

typedef struct {
    service *svc;
    call *c;
    lms_engine *engine;
    pthread_mutex_t mu; /* guards the flags and the pending batch */
    bool header_seen, half_closed, failed, job_running;
    Lmscore__V1__ScoreItemsRequest *pending; /* a batch waiting for the running job */
    int64_t pending_base;
    int64_t next_index; /* stream index of the next batch's first item */

    service_gate gate; /* where a batch's job waits for the client */

    /* Written by the jobs, which run one at a time. */
    score_header header;
    lms_score_session *session; /* the query prefilled once, for every batch */
    score_totals totals;
} items_stream;

typedef struct {
    service_job base; /* request: a ScoreItemsRequest, the header or a batch */
    items_stream *s;
    int64_t index_base;
    bool prepared; /* a batch: items holds its tokens, next the first not scored */
    score_items items;
    int32_t next;
} items_job;

static void items_job_dispose(service_job *base)
{
    score_items_free(&((items_job *)base)->items);
}

static void items_stream_free(void *state)
{
    items_stream *s = state;
    if (s->pending) lmscore__v1__score_items_request__free_unpacked(s->pending, NULL);
    if (s->session) lms_score_session_end(s->session);
    score_header_free(&s->header);
    service_gate_destroy(&s->gate);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Marks the stream over (nothing more is read or started); the running
 * job (if any) stops on its own. The caller ends the call if it has not
 * ended. */
static void items_fail(items_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->failed = true;
    if (s->pending) lmscore__v1__score_items_request__free_unpacked(s->pending, NULL);
    s->pending = NULL;
    pthread_mutex_unlock(&s->mu);
}

/* Sends the summary and OK, from job (NULL: from the CQ thread). Caller
 * holds mu and has checked that nothing is running or pending and the
 * client half-closed. */
static void items_close_locked(items_stream *s, service_job *job)
{
    score_call_summary(s->c, job, &s->header, &s->totals);
}

static service_job_step items_job_run(service_job *base);

/* Starts msg's job (taking msg over). Caller holds mu; false when the
 * stream has failed instead (out of memory, or the queue is full: the call
 * has ended). */
static bool items_start_job_locked(items_stream *s, Lmscore__V1__ScoreItemsRequest *msg,
                                   int64_t index_base)
{
    items_job *job = service_job_new(sizeof *job, s->c, s->engine, &msg->base, items_job_run);
    s->job_running = job != NULL;
    if (job) {
        job->base.dispose = items_job_dispose;
        job->s = s;
        job->index_base = index_base;
        s->job_running = service_job_submit(s->svc, &job->base);
    }
    s->failed = !s->job_running;
    return s->job_running;
}

/* The engine numbers items within its batch; the client counts over the
 * whole stream. */
static void rebase_item_field(rpc_status *st, int64_t index_base)
{
    long long k;
    const char *close = strchr(st->field, ']');
    if (index_base == 0 || !close || sscanf(st->field, "items[%lld]", &k) != 1) return;
    char field[sizeof st->field];
    snprintf(field, sizeof field, "items[%lld]%.16s", k + (long long)index_base, close + 1);
    char msg[sizeof st->message + sizeof field + 32];
    snprintf(msg, sizeof msg, "%s (item %lld of the batch): %s", field, k, st->message);
    memcpy(st->field, field, sizeof field);
    memcpy(st->message, msg, sizeof st->message - 1);
    st->message[sizeof st->message - 1] = '\0';
}

/* The job's timing: t->queue_ns is set; the run adds prepare and engine. */
static bool items_run_header(items_stream *s, const Lmscore__V1__ScoreItemsHeader *h,
                             score_timing *t, rpc_status *st)
{
    lms_error err = {0};
    int64_t t0 = monotonic_ns();
    if (score_header_prepare(s->engine, &SCORE_HEADER_FIELDS_OF(h), s->svc->cfg->max_text_bytes,
                             &s->header, &err) != LMS_OK) {
        rpc_status_from_error(st, &err);
        return false;
    }
    int64_t t1 = monotonic_ns();
    t->prepare_ns = t1 - t0;
    lms_status begun =
        score_call_session_begin(s->engine, s->c, &s->header.request, &s->session, &err);
    t->engine_ns = monotonic_ns() - t1;
    if (begun == LMS_ERR_CANCELLED) {
        call_stopped_status(s->c, st);
        return false;
    }
    if (begun != LMS_OK) {
        rpc_status_from_error(st, &err);
        return false;
    }
    return true;
}

/* The batch's tokens, checked whole (a bad item is refused before any of
 * the batch's results is sent). */
static bool items_prepare_batch(items_stream *s, items_job *job,
                                const Lmscore__V1__ItemBatch *batch, score_timing *t,
                                rpc_status *st)
{
    lms_error err = {0};
    int64_t t0 = monotonic_ns();
    lms_status prepared = score_items_prepare(s->engine, &s->header, batch->items, batch->n_items,
                                              job->index_base, &job->items, &err);
    if (prepared == LMS_OK) {
        lms_score_request req = score_request_with_items(&s->header, &job->items);
        prepared = lms_engine_validate(s->engine, &req, &err);
    }
    t->prepare_ns = monotonic_ns() - t0;
    if (prepared != LMS_OK) {
        rpc_status_from_error(st, &err);
        rebase_item_field(st, job->index_base);
        return false;
    }
    job->prepared = true;
    return true;
}

/* A message's job is done: the next one starts, or the stream closes. */
static void items_message_done(items_stream *s, service_job *job)
{
    pthread_mutex_lock(&s->mu);
    s->job_running = false;
    if (!s->failed) {
        if (s->pending) {
            Lmscore__V1__ScoreItemsRequest *next = s->pending;
            s->pending = NULL;
            if (items_start_job_locked(s, next, s->pending_base) && !s->half_closed)
                call_request_next(s->c); /* the pending slot is free again */
        } else if (s->half_closed) {
            items_close_locked(s, job);
        }
    }
    pthread_mutex_unlock(&s->mu);
}

static service_job_step items_job_run(service_job *base)
{
    items_job *job = (items_job *)base;
    items_stream *s = job->s;
    const Lmscore__V1__ScoreItemsRequest *msg =
        (const Lmscore__V1__ScoreItemsRequest *)base->request;
    score_timing timing = {.queue_ns = base->work.waited_ns};
    rpc_status st;
    bool ok = true;
    if (msg->kind_case == LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER) {
        ok = items_run_header(s, msg->header, &timing, &st);
        score_timing_add(&s->totals.timing, &timing);
    } else {
        if (!job->prepared) ok = items_prepare_batch(s, job, msg->items, &timing, &st);
        score_timing_add(&s->totals.timing, &timing);
        int32_t first = job->next;
        if (ok && !score_call_chunk(s->engine, s->session, s->c, &s->header, &job->items,
                                    &job->next, job->index_base, &s->totals, &st)) {
            rebase_item_field(&st, job->index_base + first);
            ok = false;
        }
        if (ok && job->next < job->items.n_items) return service_job_yield(base, &s->gate);
    }
    if (!ok) {
        items_fail(s);
        service_job_finish(base, &st);
    } else {
        items_message_done(s, base);
    }
    return SERVICE_JOB_DONE;
}

/* The call's stream, made on its first message; NULL when out of memory
 * (the call has ended). */
static items_stream *items_stream_of(call *c)
{
    items_stream *s = call_state(c);
    if (s) return s;
    s = calloc(1, sizeof *s);
    if (!s) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        return NULL;
    }
    s->svc = call_ctx(c);
    s->c = c;
    score_totals_init(&s->totals);
    service_gate_init(&s->gate);
    pthread_mutex_init(&s->mu, NULL);
    call_set_state(c, s);
    return s;
}

/* The client half-closed: the stream closes once its last job is done,
 * at once when none runs or waits; a stream without a header is refused. */
static void items_half_closed(items_stream *s)
{
    pthread_mutex_lock(&s->mu);
    s->half_closed = true;
    if (!s->header_seen) {
        s->failed = true;
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "missing_header", "header",
                       "header: the stream ended before its header message");
        call_finish(s->c, &st);
    } else if (!s->failed && !s->job_running && !s->pending) {
        items_close_locked(s, NULL);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Whether msg may come now: the header first and once, then item batches;
 * a header admits the call. Caller holds mu; false with st set when not. */
static bool items_in_order_locked(items_stream *s, const Lmscore__V1__ScoreItemsRequest *msg,
                                  rpc_status *st)
{
    const bool is_header = msg->kind_case == LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER;
    if (!s->header_seen && !is_header) {
        rpc_status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "missing_header", "header",
                       "header: the first message of a ScoreItems stream must be the header");
        return false;
    }
    if (s->header_seen && is_header) {
        rpc_status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "duplicate_header", "header",
                       "header: a ScoreItems stream has exactly one header, and it comes first");
        return false;
    }
    if (!is_header && msg->kind_case != LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_ITEMS) {
        rpc_status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "missing_input", "items",
                       "items: a message after the header must carry an item batch");
        return false;
    }
    return !is_header || (s->engine = service_admit(s->svc, s->c, st)) != NULL;
}

/* Takes msg over: its job starts, or, while one runs, it waits in the
 * pending slot and nothing more is read until that job is done. Caller
 * holds mu. */
static void items_accept_locked(items_stream *s, Lmscore__V1__ScoreItemsRequest *msg)
{
    int64_t index_base = s->next_index;
    if (msg->kind_case == LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER)
        s->header_seen = true;
    else
        s->next_index += (int64_t)msg->items->n_items;
    if (s->job_running) {
        s->pending = msg;
        s->pending_base = index_base;
    } else if (items_start_job_locked(s, msg, index_base)) {
        call_request_next(s->c);
    }
}

static void on_items_message(call *c, const uint8_t *data, size_t len)
{
    items_stream *s = items_stream_of(c);
    if (!s) return;
    if (!data) {
        items_half_closed(s);
        return;
    }
    Lmscore__V1__ScoreItemsRequest *msg = (Lmscore__V1__ScoreItemsRequest *)call_unpack(
        c, &lmscore__v1__score_items_request__descriptor, data, len);
    if (!msg) {
        items_fail(s); /* call_unpack ended the call */
        return;
    }
    rpc_status st;
    pthread_mutex_lock(&s->mu);
    bool taken = false;
    if (!s->failed && items_in_order_locked(s, msg, &st)) {
        items_accept_locked(s, msg);
        taken = true;
    } else if (!s->failed) {
        s->failed = true;
        call_finish(c, &st);
    }
    pthread_mutex_unlock(&s->mu);
    if (!taken) lmscore__v1__score_items_request__free_unpacked(msg, NULL);
}

/* The call is over, whatever ended it (a status, the client, the
 * deadline): the stream reads and starts nothing more. */
static void on_items_close(call *c, bool cancelled)
{
    (void)cancelled;
    items_stream *s = call_state(c);
    if (!s) return;
    items_fail(s);
    service_gate_open(&s->gate, c, true);
}

static void on_items_sent(call *c)
{
    items_stream *s = call_state(c);
    if (s) service_gate_open(&s->gate, c, false);
}

static void on_score_stream_sent(call *c)
{
    service_gate *gate = call_state(c);
    if (gate) service_gate_open(gate, c, false);
}

static void on_score_stream_close(call *c, bool cancelled)
{
    (void)cancelled;
    service_gate *gate = call_state(c);
    if (gate) service_gate_open(gate, c, true);
}

void rpc_score_init(rpc_score_handlers *h, service *svc)
{
    h->score = (call_handler){.path = "/lmscore.v1.ScoreService/Score",
                              .shape = CALL_UNARY,
                              .counts_as_scoring = true,
                              .ctx = svc,
                              .on_message = on_score};
    h->score_stream = (call_handler){.path = "/lmscore.v1.ScoreService/ScoreStream",
                                     .shape = CALL_SERVER_STREAMING,
                                     .counts_as_scoring = true,
                                     .ctx = svc,
                                     .on_message = on_score_stream,
                                     .on_sent = on_score_stream_sent,
                                     .on_close = on_score_stream_close,
                                     .free_state = score_stream_free};
    h->score_items = (call_handler){.path = "/lmscore.v1.ScoreService/ScoreItems",
                                    .shape = CALL_BIDI_STREAMING,
                                    .counts_as_scoring = true,
                                    .ctx = svc,
                                    .on_message = on_items_message,
                                    .on_sent = on_items_sent,
                                    .on_close = on_items_close,
                                    .free_state = items_stream_free};
}
