/*
 * rpc_score.c — Score, ScoreStream and ScoreItems: decode a request on the
 * CQ thread and queue it to the pool (a full queue is RESOURCE_EXHAUSTED);
 * on the worker, check and tokenize it and run the engine; stream results
 * with back-pressure, stop the work when the call is cancelled or its
 * deadline passes.
 *
 * A stream's items are scored a chunk at a time (at most 64 items and one
 * packed forward pass of max_packed_tokens rows, each chunk an engine call
 * of its own), its
 * results queued to the client without waiting. Between chunks the job goes
 * back to the end of the worker queue, or, while results wait for its
 * client, parks at the stream's gate holding no worker until the client
 * has taken them: a stream holds a worker for one chunk at most, a reader
 * that does not read holds none, and the server keeps at most one chunk's
 * results per stream.
 *
 * ScoreItems runs its stream as a chain of jobs, one at a time: the header
 * (query and labels prepared, and the query prefilled once into an engine
 * session), then one job per item batch, scored against that session. At most one
 * received batch waits behind the running job; the next message is read only
 * when that slot is free, so a fast client is throttled to the engine's pace
 * and the server holds a bounded number of items per stream.
 */
#include "rpc_score.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "score_encode.h"
#include "score_request.h"
#include "workers.h"

/* ---- engine run shared by all three RPCs ---------------------------------- */

typedef struct {
    call *c;
    bool stream; /* send chunks from on_items */
    bool with_logprobs;
    int64_t index_base; /* index of the first item of this engine call */
    score_chunk_view view;
    uint8_t *streamed; /* [n_items]: already sent by on_items */
    int32_t n_labels;
    int64_t sending_ns; /* spent in on_items, sending (waiting for the client) */
    int64_t engine_ns;  /* the engine call, less sending_ns */
} engine_run;

static int hook_should_stop(void *ctx)
{
    engine_run *run = ctx;
    worker_note_progress();
    return call_should_stop(run->c);
}

static bool send_chunk(engine_run *run, int32_t first, int32_t n, const float *scores,
                       const float *logprobs)
{
    score_chunk_view_fill(&run->view, run->index_base + first, n, run->n_labels, scores, logprobs,
                          run->with_logprobs);
    Lmscore__V1__ScoreStreamResponse msg = LMSCORE__V1__SCORE_STREAM_RESPONSE__INIT;
    msg.kind_case = LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_CHUNK;
    msg.chunk = &run->view.chunk;
    return call_send_queued(run->c, &msg.base) == CALL_SENT;
}

static int hook_on_items(void *ctx, int32_t first, int32_t n, const float *scores,
                         const float *logprobs)
{
    engine_run *run = ctx;
    worker_note_progress();
    int64_t t0 = monotonic_ns();
    bool sent = send_chunk(run, first, n, scores, logprobs);
    run->sending_ns += monotonic_ns() - t0;
    if (!sent) return 1;
    memset(run->streamed + first, 1, (size_t)n);
    return 0;
}

/* Sends the items the engine finished without an on_items call. */
static bool send_unstreamed(engine_run *run, const lms_score_result *res)
{
    int32_t i = 0;
    while (i < res->n_items) {
        if (run->streamed[i]) {
            i++;
            continue;
        }
        int32_t end = i;
        while (end < res->n_items && !run->streamed[end])
            end++;
        size_t off = (size_t)i * (size_t)res->n_labels;
        if (!send_chunk(run, i, end - i, res->scores + off, res->logprobs + off)) return false;
        i = end;
    }
    return true;
}

/* Scores req for call c, through session when given (req's items then go
 * to the session's query). On failure st holds the status to end the call
 * with; on success res holds the result (streamed already when stream). */
static bool run_engine(lms_engine *engine, lms_score_session *session, engine_run *run,
                       const lms_score_request *req, lms_score_result *res, rpc_status *st)
{
    lms_error err = {0};
    run->n_labels = req->n_labels;
    if (score_chunk_view_init(&run->view, (size_t)req->n_items, &err) != LMS_OK) {
        rpc_status_from_error(st, &err);
        return false;
    }
    lms_score_hooks hooks = {.should_stop = hook_should_stop, .ctx = run};
    if (run->stream) {
        run->streamed = calloc(req->n_items ? (size_t)req->n_items : 1, 1);
        if (!run->streamed) {
            rpc_status_set(st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
            return false;
        }
        hooks.on_items = hook_on_items;
    }
    memset(res, 0, sizeof *res);
    int64_t t0 = monotonic_ns();
    lms_status s =
        session ? lms_score_session_score(session, req->items, req->n_items, &hooks, res, &err)
                : lms_engine_score(engine, req, &hooks, res, &err);
    run->engine_ns = monotonic_ns() - t0 - run->sending_ns;
    if (s == LMS_OK && run->stream && !send_unstreamed(run, res)) s = LMS_ERR_CANCELLED;
    if (s == LMS_OK) {
        metrics_scored(res);
        metrics_observe(call_metrics_method(run->c), METRICS_ENGINE_TIME, run->engine_ns);
        log_record r;
        call_log_begin(&r, run->c, LOG_DEBUG, "scored");
        log_int(&r, "items", res->n_items);
        log_str(&r, "algorithm", lms_algorithm_name(res->algorithm));
        log_ms(&r, "engine_ms", run->engine_ns);
        log_int(&r, "cached_tokens", res->cached_tokens);
        log_end(&r);
        return true;
    }
    if (s == LMS_ERR_CANCELLED || call_should_stop(run->c))
        call_stopped_status(run->c, st);
    else
        rpc_status_from_error(st, &err);
    return false;
}

static void engine_run_free(engine_run *run, lms_score_result *res)
{
    score_chunk_view_free(&run->view);
    free(run->streamed);
    run->streamed = NULL;
    lms_score_result_free(res);
}

/* What a stream's chunks scored, for its summary. */
typedef struct {
    Lmscore__V1__Usage usage;
    score_timing timing;
    lms_algorithm algorithm; /* the last chunk's */
    char algorithm_reason[200];
    int64_t items_scored;
} stream_totals;

static void stream_totals_init(stream_totals *t)
{
    memset(t, 0, sizeof *t);
    lmscore__v1__usage__init(&t->usage);
}

static void stream_totals_add(stream_totals *t, const lms_score_result *res)
{
    score_usage_add(&t->usage, res);
    t->algorithm = res->algorithm;
    memcpy(t->algorithm_reason, res->algorithm_reason, sizeof t->algorithm_reason);
    t->items_scored += res->n_items;
}

/* A stream's closing message, sent with OK after every chunk. */
static void stream_reply(call *c, service_job *job, const score_header *h, stream_totals *t)
{
    score_timing_view timing;
    score_timing_view_fill(&timing, &t->timing);
    Lmscore__V1__ScoreSummary sum;
    lmscore__v1__score_summary__init(&sum);
    sum.n_label_token_ids = (size_t)h->request.n_labels;
    sum.label_token_ids = (int32_t *)h->request.label_ids;
    sum.algorithm = score_algorithm_to_proto(t->algorithm);
    sum.algorithm_reason = t->algorithm_reason;
    sum.usage = &t->usage;
    sum.timing = &timing.msg;
    sum.item_count = t->items_scored;
    Lmscore__V1__ScoreStreamResponse msg = LMSCORE__V1__SCORE_STREAM_RESPONSE__INIT;
    msg.kind_case = LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_SUMMARY;
    msg.summary = &sum;
    if (job)
        service_job_reply(job, &msg.base);
    else
        call_reply(c, &msg.base);
}

/* Most items in one chunk: each scored item costs a pass of the LM head
 * over the whole vocabulary (most of the work on a small model), so rows
 * alone do not bound a chunk's time. */
#define CHUNK_MAX_ITEMS 64

/* The end of the chunk that starts at item first: at most CHUNK_MAX_ITEMS
 * items while their sequences fit in one packed forward pass, at least one. */
static int32_t chunk_end(const lms_engine *e, const lms_score_request *header,
                         const score_items *items, int32_t first)
{
    const int64_t budget = lms_engine_options_get(e)->max_packed_tokens;
    int64_t rows = 0;
    int32_t end = first;
    while (end < items->n_items && end - first < CHUNK_MAX_ITEMS &&
           (end == first || rows + header->query.len + items->items[end].len <= budget)) {
        rows += header->query.len + items->items[end].len;
        end++;
    }
    return end;
}

/* Scores the chunk of items that starts at *next (through session when
 * given), queues its results to c and moves *next past it. index_base is
 * the stream index of items[0]. On failure st holds the status to end the
 * call with. */
static bool score_chunk(lms_engine *engine, lms_score_session *session, call *c,
                        const score_header *h, const score_items *items, int32_t *next,
                        int64_t index_base, stream_totals *t, rpc_status *st)
{
    int32_t first = *next, end = chunk_end(engine, &h->request, items, first);
    lms_score_request req = score_request_with_items(h, items);
    req.items += first;
    req.n_items = end - first;
    engine_run run = {.c = c,
                      .stream = true,
                      .with_logprobs = h->return_logprobs,
                      .index_base = index_base + first};
    lms_score_result res;
    bool ok = run_engine(engine, session, &run, &req, &res, st);
    t->timing.engine_ns += run.engine_ns;
    if (ok) stream_totals_add(t, &res);
    engine_run_free(&run, &res);
    *next = end;
    return ok;
}

/* ---- Score and ScoreStream -------------------------------------------------- */

typedef struct {
    service_job base;   /* request: a ScoreRequest */
    service_gate *gate; /* a ScoreStream's; NULL for Score */
    bool prepared;
    score_header header;
    score_items items;
    int32_t next; /* ScoreStream: the first item not yet scored */
    stream_totals totals;
} score_job;

/* Score's answer: every item at once. */
static void score_unary(score_job *job, score_timing *timing)
{
    service_job *base = &job->base;
    lms_score_request req = score_request_with_items(&job->header, &job->items);
    engine_run run = {.c = base->c, .with_logprobs = job->header.return_logprobs};
    lms_score_result res = {0};
    rpc_status st;
    if (run_engine(base->engine, NULL, &run, &req, &res, &st)) {
        timing->engine_ns = run.engine_ns;
        score_timing_view timing_view;
        score_timing_view_fill(&timing_view, timing);
        Lmscore__V1__Usage usage = LMSCORE__V1__USAGE__INIT;
        Lmscore__V1__ScoreResponse resp;
        score_response_fill(&resp, &usage, &run.view, &res, job->header.request.label_ids,
                            job->header.return_logprobs);
        resp.timing = &timing_view.msg;
        service_job_reply(base, &resp.base);
    } else {
        service_job_finish(base, &st);
    }
    engine_run_free(&run, &res);
}

static void score_job_dispose(service_job *base)
{
    score_job *job = (score_job *)base;
    score_items_free(&job->items);
    score_header_free(&job->header);
}

static service_job_step score_job_run(service_job *base)
{
    score_job *job = (score_job *)base;
    const Lmscore__V1__ScoreRequest *req = (const Lmscore__V1__ScoreRequest *)base->request;
    score_timing timing = {.queue_ns = base->work.waited_ns};
    if (!job->prepared) {
        int64_t started = monotonic_ns();
        lms_error err = {0};
        lms_status prepared =
            score_header_prepare(base->engine, &SCORE_HEADER_FIELDS_OF(req),
                                 base->svc->cfg->max_text_bytes, &job->header, &err);
        if (prepared == LMS_OK)
            prepared = score_items_prepare(base->engine, &job->header, req->items, req->n_items, 0,
                                           &job->items, &err);
        /* a stream scores by chunks: a bad item is refused before the first */
        lms_score_request whole = score_request_with_items(&job->header, &job->items);
        if (prepared == LMS_OK && job->gate)
            prepared = lms_engine_validate(base->engine, &whole, &err);
        if (prepared != LMS_OK) {
            rpc_status st;
            rpc_status_from_error(&st, &err);
            service_job_finish(base, &st);
            return SERVICE_JOB_DONE;
        }
        job->prepared = true;
        timing.prepare_ns = monotonic_ns() - started;
    }
    if (!job->gate) {
        score_unary(job, &timing);
        return SERVICE_JOB_DONE;
    }
    score_timing_add(&job->totals.timing, &timing);
    rpc_status st;
    if (!score_chunk(base->engine, NULL, base->c, &job->header, &job->items, &job->next, 0,
                     &job->totals, &st)) {
        service_job_finish(base, &st);
        return SERVICE_JOB_DONE;
    }
    if (job->next < job->items.n_items) return service_job_yield(base, job->gate);
    stream_reply(base->c, base, &job->header, &job->totals);
    return SERVICE_JOB_DONE;
}

static void score_stream_free(void *state)
{
    service_gate *gate = state;
    service_gate_destroy(gate);
    free(gate);
}

/* Queues the job of req for c; gate is a ScoreStream's (NULL: a unary
 * Score). */
static void submit(service *svc, call *c, lms_engine *engine, ProtobufCMessage *req,
                   service_gate *gate)
{
    score_job *job = service_job_new(sizeof *job, c, engine, req, score_job_run);
    if (!job) return;
    job->base.dispose = score_job_dispose;
    job->gate = gate;
    stream_totals_init(&job->totals);
    service_job_submit(svc, &job->base);
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
    if (req) submit(svc, c, engine, req, gate);
}

void rpc_score_submit(service *svc, call *c, lms_engine *engine, Lmscore__V1__ScoreRequest *req)
{
    submit(svc, c, engine, &req->base, NULL);
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
    stream_totals totals;
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
    stream_reply(s->c, job, &s->header, &s->totals);
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
    engine_run run = {.c = s->c};
    lms_score_hooks hooks = {.should_stop = hook_should_stop, .ctx = &run};
    lms_status begun =
        lms_score_session_begin(s->engine, &s->header.request, &hooks, &s->session, &err);
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
        if (ok && !score_chunk(s->engine, s->session, s->c, &s->header, &job->items, &job->next,
                               job->index_base, &s->totals, &st)) {
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

static void on_items_message(call *c, const uint8_t *data, size_t len)
{
    items_stream *s = call_state(c);
    rpc_status st;
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s) {
            rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
            call_finish(c, &st);
            return;
        }
        s->svc = call_ctx(c);
        s->c = c;
        stream_totals_init(&s->totals);
        service_gate_init(&s->gate);
        pthread_mutex_init(&s->mu, NULL);
        call_set_state(c, s);
    }
    if (!data) {
        pthread_mutex_lock(&s->mu);
        s->half_closed = true;
        if (!s->header_seen) {
            s->failed = true;
            rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "missing_header", "header",
                           "header: the stream ended before its header message");
            call_finish(c, &st);
        } else if (!s->failed && !s->job_running && !s->pending) {
            items_close_locked(s, NULL);
        }
        pthread_mutex_unlock(&s->mu);
        return;
    }
    Lmscore__V1__ScoreItemsRequest *msg = (Lmscore__V1__ScoreItemsRequest *)call_unpack(
        c, &lmscore__v1__score_items_request__descriptor, data, len);
    if (!msg) {
        items_fail(s); /* call_unpack ended the call */
        return;
    }
    bool is_header = msg->kind_case == LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER;
    pthread_mutex_lock(&s->mu);
    if (s->failed) {
        pthread_mutex_unlock(&s->mu);
        lmscore__v1__score_items_request__free_unpacked(msg, NULL);
        return;
    }
    bool refuse = false;
    if (!s->header_seen && !is_header) {
        refuse = true;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "missing_header", "header",
                       "header: the first message of a ScoreItems stream must be the header");
    } else if (s->header_seen && is_header) {
        refuse = true;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "duplicate_header", "header",
                       "header: a ScoreItems stream has exactly one header, and it comes first");
    } else if (!is_header && msg->kind_case != LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_ITEMS) {
        refuse = true;
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "missing_input", "items",
                       "items: a message after the header must carry an item batch");
    } else if (is_header && !(s->engine = service_admit(s->svc, c, &st))) {
        refuse = true;
    }
    if (refuse) {
        s->failed = true;
        call_finish(c, &st);
        pthread_mutex_unlock(&s->mu);
        lmscore__v1__score_items_request__free_unpacked(msg, NULL);
        return;
    }
    int64_t index_base = s->next_index;
    if (is_header)
        s->header_seen = true;
    else
        s->next_index += (int64_t)msg->items->n_items;
    bool read_on = true;
    if (s->job_running) {
        s->pending = msg; /* read no further until the running job is done */
        s->pending_base = index_base;
        read_on = false;
    } else {
        read_on = items_start_job_locked(s, msg, index_base);
    }
    if (read_on) call_request_next(c);
    pthread_mutex_unlock(&s->mu);
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
