/*
 * rpc_rerank.c — the Rerank RPC (see rpc_rerank.h). The request stays in
 * the call's state until the answer is made: its documents and top_n are
 * the answer's.
 */
#include "rpc_rerank.h"

#include <stdlib.h>

#include "decode_budget.h"
#include "rerank_order.h"
#include "score_call.h"

static void request_free(void *state)
{
    lmscore__v1__rerank_request__free_unpacked(state, NULL);
}

static void name_documents(rpc_status *st)
{
    rerank_name_items(st, "documents");
}

static void fail(call *c, const lms_error *err)
{
    rpc_status st;
    rpc_status_from_error(&st, err);
    name_documents(&st);
    call_finish(c, &st);
}

/* The truncation the request asks for, in out; NULL for none. */
static const Lmscore__V1__Truncation *
truncation(const service *svc, const Lmscore__V1__RerankRequest *rq, Lmscore__V1__Truncation *out)
{
    bool cut = rq->truncate == LMSCORE__V1__TRUNCATE_MODE__TRUNCATE_MODE_ON ||
               (rq->truncate == LMSCORE__V1__TRUNCATE_MODE__TRUNCATE_MODE_SERVER_DEFAULT &&
                svc->cfg->truncate_documents);
    if (!cut) return NULL;
    lmscore__v1__truncation__init(out);
    if (rq->truncation) {
        out->max_item_tokens = rq->truncation->max_item_tokens;
        out->max_sequence_tokens = rq->truncation->max_sequence_tokens;
        out->side = rq->truncation->side;
    }
    return out;
}

/* The answer, on the worker: the documents ranked, top_n of them. */
static void reply(service_job *job, const Lmscore__V1__ScoreResponse *resp)
{
    const Lmscore__V1__RerankRequest *rq = call_state(job->c);
    rerank_ranked *order = rerank_order(resp);
    size_t shown = rerank_shown(rq->top_n, resp->n_items);
    Lmscore__V1__RerankResult *results = calloc(shown ? shown : 1, sizeof *results);
    Lmscore__V1__RerankResult **ptrs = calloc(shown ? shown : 1, sizeof *ptrs);
    if (!order || !results || !ptrs) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        service_job_finish(job, &st);
    } else {
        for (size_t k = 0; k < shown; k++) {
            const Lmscore__V1__ItemScores *it = resp->items[order[k].index];
            Lmscore__V1__RerankResult *r = &results[k];
            lmscore__v1__rerank_result__init(r);
            r->index = (int32_t)order[k].index;
            r->relevance_score = order[k].relevance;
            r->log_odds = rerank_log_odds(it);
            if (rq->return_documents) r->document = rq->documents[order[k].index];
            r->tokens_kept = it->tokens_kept;
            r->tokens_dropped = it->tokens_dropped;
            ptrs[k] = r;
        }
        Lmscore__V1__RerankResponse out = LMSCORE__V1__RERANK_RESPONSE__INIT;
        out.n_results = shown;
        out.results = ptrs;
        out.usage = resp->usage;
        out.timing = resp->timing;
        service_job_reply(job, &out.base);
    }
    free(order);
    free(results);
    free(ptrs);
}

static void on_message(call *c, const uint8_t *msg, size_t len)
{
    rpc_rerank_handlers *h = call_ctx(c);
    lms_engine *engine;
    ProtobufCMessage *decoded =
        service_begin(h->svc, c, &lmscore__v1__rerank_request__descriptor, msg, len, &engine);
    if (!decoded) return;
    Lmscore__V1__RerankRequest *rq = (Lmscore__V1__RerankRequest *)decoded;
    call_set_state(c, rq); /* freed with the call */
    if (!h->profile->bound) {
        fail(c, &h->profile->unbound);
        return;
    }
    lms_error err = {0};
    if (rq->top_n < 0) {
        lms_fail(&err, LMS_ERR_INVALID_ARGUMENT, "malformed_request", "top_n",
                 "top_n: %d; give 0 (every document) or a positive count", rq->top_n);
        fail(c, &err);
        return;
    }
    decode_budget budget;
    decode_budget_init(&budget, decode_budget_limit(h->svc->cfg->max_message_bytes));
    Lmscore__V1__Truncation cut;
    Lmscore__V1__ScoreRequest *req;
    if (rerank_profile_request(h->profile, rq->query, rq->documents, rq->n_documents,
                               truncation(h->svc, rq, &cut), &budget, &req, &err) != LMS_OK) {
        fail(c, &err);
        return;
    }
    req->return_logprobs = true; /* for the log-odds */
    score_call_submit_unary(h->svc, c, engine, req, reply, name_documents);
}

void rpc_rerank_init(rpc_rerank_handlers *h, service *svc, const rerank_profile *profile)
{
    h->svc = svc;
    h->profile = profile;
    h->rerank = (call_handler){.path = "/lmscore.v1.ScoreService/Rerank",
                               .shape = CALL_UNARY,
                               .counts_as_scoring = true,
                               .ctx = h,
                               .on_message = on_message,
                               .free_state = request_free};
}
