/*
 * http_rerank.c — the rerank endpoints (see http_rerank.h).
 */
#include "http_rerank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_call.h"
#include "json_request.h"
#include "rerank_order.h"
#include "score_call.h"

static void state_free(void *state)
{
    rerank_request_free(state);
    free(state);
}

static void on_body(call *c, const char *body, size_t len)
{
    http_rerank *h = call_ctx(c);
    lms_engine *engine = http_call_admit(h->svc, c);
    if (!engine) return;
    decode_budget budget;
    http_call_budget(h->svc, &budget);
    lms_error err = {0};
    char *model;
    rerank_request *rr = calloc(1, sizeof *rr);
    if (!rr) {
        lms_fail(&err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
        http_call_fail(c, &err);
        return;
    }
    call_set_state(c, rr); /* freed with the call */
    if (json_rerank_request(h->dialect, body, len, &budget, rr, &model, &err) != LMS_OK) {
        http_call_fail(c, &err);
        return;
    }
    if (!http_call_check_model(c, h->svc, model)) return;
    if (!h->profile->bound) {
        http_call_fail(c, &h->profile->unbound);
        return;
    }
    Lmscore__V1__ScoreRequest *req;
    bool truncate = rr->truncation_said ? rr->truncate : h->svc->cfg->truncate_documents;
    if (rerank_profile_request(h->profile, rr->query, rr->documents, rr->n_documents,
                               truncate ? &rr->truncation : NULL, &budget, &req, &err) != LMS_OK) {
        http_call_fail(c, &err);
        return;
    }
    rr->n_scored = rr->n_documents;
    if (!rr->return_documents) rerank_request_drop_documents(rr); /* the answer has none */
    req->return_logprobs = rr->raw_scores;
    score_call_submit(h->svc, c, engine, req, NULL);
}

static void document_text(json_writer *w, const char *name, const char *text, bool object)
{
    json_key(w, name);
    if (object) {
        json_object_open(w);
        json_key(w, "text");
    }
    json_string(w, text);
    if (object) json_object_close(w);
}

/* A Cohere result opened: {"index", "relevance_score" (the caller closes
 * it, after what else it holds). */
static void ranked_result(json_writer *w, const rerank_ranked *r)
{
    json_object_open(w);
    json_key(w, "index");
    json_int(w, (int64_t)r->index);
    json_key(w, "relevance_score");
    json_float(w, r->relevance);
}

/* Cohere's search units: one per query and started hundred documents. */
static int64_t search_units(size_t n_documents)
{
    return n_documents ? (int64_t)((n_documents + 99) / 100) : 1;
}

/* The documents cut to their budget, by index: [{index, tokens_kept,
 * tokens_dropped}], under meta; nothing when none was. */
static void truncated_documents(json_writer *w, const Lmscore__V1__ScoreResponse *resp)
{
    bool any = false;
    for (size_t i = 0; i < resp->n_items; i++) {
        const Lmscore__V1__ItemScores *it = resp->items[i];
        if (it->tokens_dropped <= 0) continue;
        if (!any) {
            json_key(w, "truncated_documents");
            json_array_open(w);
            any = true;
        }
        json_object_open(w);
        json_key(w, "index");
        json_int(w, (int64_t)i);
        json_key(w, "tokens_kept");
        json_int(w, it->tokens_kept);
        json_key(w, "tokens_dropped");
        json_int(w, it->tokens_dropped);
        json_object_close(w);
    }
    if (any) json_array_close(w);
}

/* Cohere's meta: api_version, billed_units, lmscore's truncated_documents
 * (v2 adds tokens, the caller's). */
static void cohere_meta_open(json_writer *w, const char *version, const rerank_request *rr,
                             const Lmscore__V1__ScoreResponse *resp)
{
    json_key(w, "meta");
    json_object_open(w);
    json_key(w, "api_version");
    json_object_open(w);
    json_key(w, "version");
    json_string(w, version);
    json_object_close(w);
    json_key(w, "billed_units");
    json_object_open(w);
    json_key(w, "search_units");
    json_int(w, search_units(rr->n_scored));
    json_object_close(w);
    truncated_documents(w, resp);
}

/* Cohere v1, Jina, vLLM: {id, model, results, meta, usage}; the id is the
 * call's request id. */
static void cohere_v1(json_writer *w, const call *c, const http_rerank *h, const rerank_request *rr,
                      const rerank_ranked *order, size_t shown,
                      const Lmscore__V1__ScoreResponse *resp)
{
    json_object_open(w);
    json_key(w, "id");
    json_string(w, call_request_id(c));
    http_call_model(w, h->svc);
    json_key(w, "results");
    json_array_open(w);
    for (size_t k = 0; k < shown; k++) {
        ranked_result(w, &order[k]);
        if (rr->return_documents) {
            size_t i = order[k].index;
            if (rr->objects && rr->objects[i]) {
                json_key(w, "document"); /* as it came, as Cohere answers it */
                json_raw(w, rr->objects[i], strlen(rr->objects[i]));
            } else {
                document_text(w, "document", rr->documents[i], true);
            }
        }
        json_object_close(w);
    }
    json_array_close(w);
    cohere_meta_open(w, "1", rr, resp);
    json_object_close(w);
    http_call_usage(w, resp->usage);
    json_object_close(w);
}

/* Cohere v2: {id, results, meta}; the id is the call's request id. */
static void cohere_v2(json_writer *w, const call *c, const rerank_request *rr,
                      const rerank_ranked *order, size_t shown,
                      const Lmscore__V1__ScoreResponse *resp)
{
    json_object_open(w);
    json_key(w, "id");
    json_string(w, call_request_id(c));
    json_key(w, "results");
    json_array_open(w);
    for (size_t k = 0; k < shown; k++) {
        ranked_result(w, &order[k]);
        json_object_close(w);
    }
    json_array_close(w);
    cohere_meta_open(w, "2", rr, resp);
    json_key(w, "tokens");
    json_object_open(w);
    json_key(w, "input_tokens");
    json_int(w, resp->usage ? resp->usage->prompt_tokens : 0);
    json_key(w, "output_tokens");
    json_int(w, 0);
    json_object_close(w);
    json_object_close(w);
    json_object_close(w);
}

/* TEI: [{index, score, text}], every text; a text cut to its budget also
 * says tokens_kept and tokens_dropped. */
static void tei(json_writer *w, const rerank_request *rr, const rerank_ranked *order, size_t n,
                const Lmscore__V1__ScoreResponse *resp)
{
    json_array_open(w);
    for (size_t k = 0; k < n; k++) {
        json_object_open(w);
        json_key(w, "index");
        json_int(w, (int64_t)order[k].index);
        json_key(w, "score");
        json_float(w, rr->raw_scores ? rerank_log_odds(resp->items[order[k].index])
                                     : order[k].relevance);
        if (rr->return_documents) document_text(w, "text", rr->documents[order[k].index], false);
        const Lmscore__V1__ItemScores *it = resp->items[order[k].index];
        if (it->tokens_dropped > 0) {
            json_key(w, "tokens_kept");
            json_int(w, it->tokens_kept);
            json_key(w, "tokens_dropped");
            json_int(w, it->tokens_dropped);
        }
        json_object_close(w);
    }
    json_array_close(w);
}

static void render(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    const http_rerank *h = call_ctx(c);
    const rerank_request *rr = call_state(c);
    const Lmscore__V1__ScoreResponse *resp = (const Lmscore__V1__ScoreResponse *)reply;
    size_t n = resp->n_items;
    rerank_ranked *order = rerank_order(resp);
    if (!order) {
        w->failed = true;
        return;
    }
    size_t shown = rerank_shown(rr->top_n, n);
    switch (h->dialect) {
    case RERANK_COHERE:
        cohere_v1(w, c, h, rr, order, shown, resp);
        break;
    case RERANK_COHERE_V2:
        cohere_v2(w, c, rr, order, shown, resp);
        break;
    case RERANK_TEI:
        tei(w, rr, order, n, resp);
        break;
    }
    free(order);
}

static void name_documents(rpc_status *st)
{
    rerank_name_items(st, "documents");
}

static void name_texts(rpc_status *st)
{
    rerank_name_items(st, "texts");
}

void http_rerank_init(http_rerank *h, service *svc, const rerank_profile *profile,
                      rerank_dialect dialect)
{
    static const struct {
        const char *path, *metrics_path;
    } paths[] = {[RERANK_COHERE] = {"/v1/rerank", "/http/rerank"},
                 [RERANK_COHERE_V2] = {"/v2/rerank", "/http/rerank_v2"},
                 [RERANK_TEI] = {"/rerank", "/http/rerank_tei"}};
    h->svc = svc;
    h->profile = profile;
    h->dialect = dialect;
    h->endpoint =
        (http_endpoint){.path = paths[dialect].path,
                        .handler = {.path = paths[dialect].metrics_path,
                                    .shape = CALL_UNARY,
                                    .counts_as_scoring = true,
                                    .ctx = h,
                                    .free_state = state_free},
                        .on_body = on_body,
                        .render = render,
                        .name_fields = dialect == RERANK_TEI ? name_texts : name_documents};
}
