/*
 * score_call.c — a scoring call, whichever door it came in by (see
 * score_call.h): check and tokenize the request on a worker and run the
 * engine, stopping the work when the call is cancelled or its deadline
 * passes.
 *
 * A stream's items are scored a chunk at a time (at most 64 items and one
 * packed forward pass of max_packed_tokens rows, each chunk an engine call
 * of its own), its results queued to the client without waiting. Between
 * chunks the job goes back to the end of the worker queue, or, while
 * results wait for its client, parks at the stream's gate holding no worker
 * until the client has taken them: a stream holds a worker for one chunk at
 * most, a reader that does not read holds none, and the server keeps at
 * most one chunk's results per stream.
 */
#include "score_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "workers.h"

/* ---- one engine call, shared by every scoring call -------------------------- */

typedef struct {
    call *c;
    bool stream; /* send chunks from on_items */
    bool with_logprobs;
    int64_t index_base; /* index of the first item of this engine call */
    score_chunk_view view;
    /* With truncation: the engine call's items' tokens kept and dropped
     * (score_items'), else NULL. */
    const int32_t *kept, *dropped;
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

/* Says, on each item of v (the engine call's items first.. onwards) that
 * was cut, what the cut kept and dropped. */
static void note_cuts(const engine_run *run, score_chunk_view *v, int32_t first, int32_t n)
{
    if (!run->dropped) return;
    for (int32_t k = 0; k < n; k++)
        if (run->dropped[first + k] > 0) {
            v->items[k].tokens_kept = run->kept[first + k];
            v->items[k].tokens_dropped = run->dropped[first + k];
        }
}

static bool send_chunk(engine_run *run, int32_t first, int32_t n, const float *scores,
                       const float *logprobs)
{
    score_chunk_view_fill(&run->view, run->index_base + first, n, run->n_labels, scores, logprobs,
                          run->with_logprobs);
    note_cuts(run, &run->view, first, n);
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

void score_totals_init(score_totals *t)
{
    memset(t, 0, sizeof *t);
    lmscore__v1__usage__init(&t->usage);
}

static void score_totals_add(score_totals *t, const lms_score_result *res)
{
    score_usage_add(&t->usage, res);
    t->algorithm = res->algorithm;
    memcpy(t->algorithm_reason, res->algorithm_reason, sizeof t->algorithm_reason);
    t->items_scored += res->n_items;
}

void score_call_summary(call *c, service_job *job, const score_header *h, score_totals *t)
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

bool score_call_chunk(lms_engine *engine, lms_score_session *session, call *c,
                      const score_header *h, const score_items *items, int32_t *next,
                      int64_t index_base, score_totals *t, rpc_status *st)
{
    int32_t first = *next, end = chunk_end(engine, &h->request, items, first);
    lms_score_request req = score_request_with_items(h, items);
    req.items += first;
    req.n_items = end - first;
    engine_run run = {.c = c,
                      .stream = true,
                      .with_logprobs = h->return_logprobs,
                      .index_base = index_base + first,
                      .kept = items->kept ? items->kept + first : NULL,
                      .dropped = items->dropped ? items->dropped + first : NULL};
    lms_score_result res;
    bool ok = run_engine(engine, session, &run, &req, &res, st);
    t->timing.engine_ns += run.engine_ns;
    if (ok) score_totals_add(t, &res);
    engine_run_free(&run, &res);
    *next = end;
    return ok;
}

lms_status score_call_session_begin(lms_engine *engine, call *c, const lms_score_request *req,
                                    lms_score_session **out, lms_error *err)
{
    engine_run run = {.c = c};
    lms_score_hooks hooks = {.should_stop = hook_should_stop, .ctx = &run};
    return lms_score_session_begin(engine, req, &hooks, out, err);
}

/* ---- Score and ScoreStream, and the HTTP calls that score ------------------ */

typedef struct {
    service_job base;                    /* request: a ScoreRequest */
    service_gate *gate;                  /* a ScoreStream's; NULL for Score */
    score_reply_fn reply;                /* NULL: the ScoreResponse is the answer */
    void (*name_fields)(rpc_status *st); /* optional */
    bool prepared;
    score_header header;
    score_items items;
    int32_t next; /* ScoreStream: the first item not yet scored */
    score_totals totals;
} score_job;

/* Score's answer: every item at once. */
/* Ends the job's call with st, in the call's own terms. */
static void score_job_fail(score_job *job, rpc_status *st)
{
    if (job->name_fields) job->name_fields(st);
    service_job_finish(&job->base, st);
}

static void score_unary(score_job *job, score_timing *timing)
{
    service_job *base = &job->base;
    lms_score_request req = score_request_with_items(&job->header, &job->items);
    engine_run run = {.c = base->c,
                      .with_logprobs = job->header.return_logprobs,
                      .kept = job->items.kept,
                      .dropped = job->items.dropped};
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
        note_cuts(&run, &run.view, 0, res.n_items);
        resp.timing = &timing_view.msg;
        if (job->reply)
            job->reply(base, &resp);
        else
            service_job_reply(base, &resp.base);
    } else {
        score_job_fail(job, &st);
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
            score_job_fail(job, &st);
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
    if (!score_call_chunk(base->engine, NULL, base->c, &job->header, &job->items, &job->next, 0,
                          &job->totals, &st)) {
        service_job_finish(base, &st);
        return SERVICE_JOB_DONE;
    }
    if (job->next < job->items.n_items) return service_job_yield(base, job->gate);
    score_call_summary(base->c, base, &job->header, &job->totals);
    return SERVICE_JOB_DONE;
}

static void submit(service *svc, call *c, lms_engine *engine, Lmscore__V1__ScoreRequest *req,
                   service_gate *gate, score_reply_fn reply, void (*name_fields)(rpc_status *))
{
    score_job *job = service_job_new(sizeof *job, c, engine, &req->base, score_job_run);
    if (!job) return;
    job->base.dispose = score_job_dispose;
    job->gate = gate;
    job->reply = reply;
    job->name_fields = name_fields;
    score_totals_init(&job->totals);
    service_job_submit(svc, &job->base);
}

void score_call_submit(service *svc, call *c, lms_engine *engine, Lmscore__V1__ScoreRequest *req,
                       service_gate *gate)
{
    submit(svc, c, engine, req, gate, NULL, NULL);
}

void score_call_submit_unary(service *svc, call *c, lms_engine *engine,
                             Lmscore__V1__ScoreRequest *req, score_reply_fn reply,
                             void (*name_fields)(rpc_status *st))
{
    submit(svc, c, engine, req, NULL, reply, name_fields);
}
