/*
 * rpc_score.c — Score, ScoreStream and ScoreItems: decode a request on the
 * CQ thread and queue it to the pool (a full queue is RESOURCE_EXHAUSTED);
 * on the worker, check and tokenize it and run the engine; stream results
 * with back-pressure, stop the work when the call is cancelled or its
 * deadline passes.
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
    return call_send(run->c, &msg.base, true) == CALL_SENT;
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

static void fill_summary(Lmscore__V1__ScoreSummary *sum, Lmscore__V1__Usage *usage,
                         score_timing_view *timing, const score_header *h, lms_algorithm algo,
                         const char *reason, int64_t n_items)
{
    lmscore__v1__score_summary__init(sum);
    sum->n_label_token_ids = (size_t)h->request.n_labels;
    sum->label_token_ids = (int32_t *)h->request.label_ids;
    sum->algorithm = score_algorithm_to_proto(algo);
    sum->algorithm_reason = (char *)reason;
    sum->usage = usage;
    sum->timing = &timing->msg;
    sum->item_count = n_items;
}

/* ---- Score and ScoreStream -------------------------------------------------- */

typedef struct {
    service_job base; /* request: a ScoreRequest */
    bool stream;
} score_job;

/* The answer of a scored request: a ScoreStream's summary (its chunks have
 * been sent), or Score's response. */
static void score_job_reply(score_job *job, const score_header *header, engine_run *run,
                            const lms_score_result *res, const score_timing *timing)
{
    score_timing_view timing_view;
    score_timing_view_fill(&timing_view, timing);
    Lmscore__V1__Usage usage = LMSCORE__V1__USAGE__INIT;
    if (job->stream) {
        score_usage_add(&usage, res);
        Lmscore__V1__ScoreSummary sum;
        fill_summary(&sum, &usage, &timing_view, header, res->algorithm, res->algorithm_reason,
                     res->n_items);
        Lmscore__V1__ScoreStreamResponse msg = LMSCORE__V1__SCORE_STREAM_RESPONSE__INIT;
        msg.kind_case = LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_SUMMARY;
        msg.summary = &sum;
        service_job_reply(&job->base, &msg.base);
    } else {
        Lmscore__V1__ScoreResponse resp;
        score_response_fill(&resp, &usage, &run->view, res, header->request.label_ids,
                            header->return_logprobs);
        resp.timing = &timing_view.msg;
        service_job_reply(&job->base, &resp.base);
    }
}

static void score_job_run(service_job *base)
{
    score_job *job = (score_job *)base;
    const Lmscore__V1__ScoreRequest *req = (const Lmscore__V1__ScoreRequest *)base->request;
    int64_t started = monotonic_ns();
    score_timing timing = {.queue_ns = base->work.waited_ns};
    lms_error err = {0};
    rpc_status st;
    score_header header = {0};
    score_items items = {0};
    engine_run run = {.c = base->c, .stream = job->stream};
    lms_score_result res = {0};
    lms_status prepared =
        score_header_prepare(base->engine, &SCORE_HEADER_FIELDS_OF(req),
                             ((service *)call_ctx(base->c))->cfg->max_text_bytes, &header, &err);
    if (prepared == LMS_OK)
        prepared =
            score_items_prepare(base->engine, &header, req->items, req->n_items, 0, &items, &err);
    bool ok = prepared == LMS_OK;
    if (!ok) {
        rpc_status_from_error(&st, &err);
    } else {
        lms_score_request engine_req = score_request_with_items(&header, &items);
        timing.prepare_ns = monotonic_ns() - started;
        run.with_logprobs = header.return_logprobs;
        ok = run_engine(base->engine, NULL, &run, &engine_req, &res, &st);
        timing.engine_ns = run.engine_ns;
    }
    if (ok)
        score_job_reply(job, &header, &run, &res, &timing);
    else
        service_job_finish(base, &st);
    engine_run_free(&run, &res);
    score_items_free(&items);
    score_header_free(&header);
}

static void on_score_message(call *c, const uint8_t *msg, size_t len, bool stream)
{
    service *svc = call_ctx(c);
    lms_engine *engine;
    ProtobufCMessage *req =
        service_begin(svc, c, &lmscore__v1__score_request__descriptor, msg, len, &engine);
    if (!req) return;
    score_job *job = service_job_new(sizeof *job, c, engine, req, score_job_run);
    if (!job) return;
    job->stream = stream;
    service_job_submit(svc, &job->base);
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

    /* Written by the jobs, which run one at a time. */
    score_header header;
    lms_score_session *session; /* the query prefilled once, for every batch */
    Lmscore__V1__Usage usage;
    score_timing timing;
    lms_algorithm algorithm;
    char algorithm_reason[200];
    int64_t items_scored;
} items_stream;

typedef struct {
    service_job base; /* request: a ScoreItemsRequest, the header or a batch */
    items_stream *s;
    int64_t index_base;
} items_job;

static void items_stream_free(void *state)
{
    items_stream *s = state;
    if (s->pending) lmscore__v1__score_items_request__free_unpacked(s->pending, NULL);
    if (s->session) lms_score_session_end(s->session);
    score_header_free(&s->header);
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
    Lmscore__V1__ScoreSummary sum;
    score_timing_view timing;
    score_timing_view_fill(&timing, &s->timing);
    fill_summary(&sum, &s->usage, &timing, &s->header, s->algorithm, s->algorithm_reason,
                 s->items_scored);
    Lmscore__V1__ScoreStreamResponse msg = LMSCORE__V1__SCORE_STREAM_RESPONSE__INIT;
    msg.kind_case = LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_SUMMARY;
    msg.summary = &sum;
    if (job)
        service_job_reply(job, &msg.base);
    else
        call_reply(s->c, &msg.base);
}

static void items_job_run(service_job *base);

/* Starts msg's job (taking msg over). Caller holds mu; false when the
 * stream has failed instead (out of memory, or the queue is full: the call
 * has ended). */
static bool items_start_job_locked(items_stream *s, Lmscore__V1__ScoreItemsRequest *msg,
                                   int64_t index_base)
{
    items_job *job = service_job_new(sizeof *job, s->c, s->engine, &msg->base, items_job_run);
    s->job_running = job != NULL;
    if (job) {
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

static bool items_run_batch(items_stream *s, const Lmscore__V1__ItemBatch *batch,
                            int64_t index_base, score_timing *t, rpc_status *st)
{
    lms_error err = {0};
    int64_t t0 = monotonic_ns();
    score_items items;
    if (score_items_prepare(s->engine, &s->header, batch->items, batch->n_items, index_base, &items,
                            &err) != LMS_OK) {
        rpc_status_from_error(st, &err);
        return false;
    }
    lms_score_request req = score_request_with_items(&s->header, &items);
    t->prepare_ns = monotonic_ns() - t0;
    engine_run run = {.c = s->c,
                      .stream = true,
                      .with_logprobs = s->header.return_logprobs,
                      .index_base = index_base};
    lms_score_result res;
    bool ok = run_engine(s->engine, s->session, &run, &req, &res, st);
    t->engine_ns = run.engine_ns;
    if (ok) {
        score_usage_add(&s->usage, &res);
        s->algorithm = res.algorithm;
        memcpy(s->algorithm_reason, res.algorithm_reason, sizeof s->algorithm_reason);
        s->items_scored += res.n_items;
    } else {
        rebase_item_field(st, index_base);
    }
    engine_run_free(&run, &res);
    score_items_free(&items);
    return ok;
}

static void items_job_run(service_job *base)
{
    items_job *job = (items_job *)base;
    items_stream *s = job->s;
    const Lmscore__V1__ScoreItemsRequest *msg =
        (const Lmscore__V1__ScoreItemsRequest *)base->request;
    score_timing timing = {.queue_ns = base->work.waited_ns};
    rpc_status st;
    bool ok = msg->kind_case == LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER
                  ? items_run_header(s, msg->header, &timing, &st)
                  : items_run_batch(s, msg->items, job->index_base, &timing, &st);
    score_timing_add(&s->timing, &timing);
    if (!ok) {
        items_fail(s);
        service_job_finish(base, &st);
    } else {
        pthread_mutex_lock(&s->mu);
        s->job_running = false;
        if (!s->failed) {
            if (s->pending) {
                Lmscore__V1__ScoreItemsRequest *next = s->pending;
                s->pending = NULL;
                if (items_start_job_locked(s, next, s->pending_base) && !s->half_closed)
                    call_request_next(s->c); /* the pending slot is free again */
            } else if (s->half_closed) {
                items_close_locked(s, base);
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
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
        lmscore__v1__usage__init(&s->usage);
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
    if (s) items_fail(s);
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
                                     .on_message = on_score_stream};
    h->score_items = (call_handler){.path = "/lmscore.v1.ScoreService/ScoreItems",
                                    .shape = CALL_BIDI_STREAMING,
                                    .counts_as_scoring = true,
                                    .ctx = svc,
                                    .on_message = on_items_message,
                                    .on_close = on_items_close,
                                    .free_state = items_stream_free};
}
