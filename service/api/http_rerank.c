/*
 * http_rerank.c — the /v1/rerank endpoint (see http_rerank.h).
 */
#include "http_rerank.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_call.h"
#include "json_request.h"
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
    if (json_rerank_request(body, len, &budget, rr, &model, &err) != LMS_OK) {
        http_call_fail(c, &err);
        return;
    }
    if (!http_call_check_model(c, engine, model)) return;
    if (!h->profile->bound) {
        http_call_fail(c, &h->profile->unbound);
        return;
    }
    Lmscore__V1__ScoreRequest *req;
    if (rerank_profile_request(h->profile, rr->query, rr->documents, rr->n_documents, &budget, &req,
                               &err) != LMS_OK) {
        http_call_fail(c, &err);
        return;
    }
    if (!rr->return_documents) rerank_request_drop_documents(rr); /* the answer has none */
    score_call_submit(h->svc, c, engine, req, NULL);
}

typedef struct {
    float relevance;
    size_t index;
} ranked;

static int by_relevance(const void *a, const void *b)
{
    const ranked *x = a, *y = b;
    if (x->relevance != y->relevance) return x->relevance > y->relevance ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

static void render(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    const http_rerank *h = call_ctx(c);
    const rerank_request *rr = call_state(c);
    const Lmscore__V1__ScoreResponse *resp = (const Lmscore__V1__ScoreResponse *)reply;
    size_t n = resp->n_items;
    ranked *order = malloc((n ? n : 1) * sizeof *order);
    if (!order) {
        w->failed = true;
        return;
    }
    for (size_t i = 0; i < n; i++)
        order[i] = (ranked){.relevance = resp->items[i]->scores[0], .index = i};
    qsort(order, n, sizeof *order, by_relevance);
    size_t shown = rr->top_n > 0 && (size_t)rr->top_n < n ? (size_t)rr->top_n : n;
    json_object_open(w);
    http_call_model(w, h->svc->engine);
    json_key(w, "results");
    json_array_open(w);
    for (size_t k = 0; k < shown; k++) {
        json_object_open(w);
        json_key(w, "index");
        json_int(w, (int64_t)order[k].index);
        json_key(w, "relevance_score");
        json_float(w, order[k].relevance);
        if (rr->return_documents) {
            json_key(w, "document");
            json_object_open(w);
            json_key(w, "text");
            json_string(w, rr->documents[order[k].index]);
            json_object_close(w);
        }
        json_object_close(w);
    }
    json_array_close(w);
    http_call_usage(w, resp->usage);
    json_object_close(w);
    free(order);
}

/* dst = src with every "items" made "documents" (cut to size). */
static void rename_items(char *dst, size_t size, const char *src)
{
    size_t n = 0;
    while (*src && n + 1 < size) {
        if (strncmp(src, "items", 5) == 0) {
            n += (size_t)snprintf(dst + n, size - n, "documents");
            if (n >= size) n = size - 1;
            src += 5;
        } else {
            dst[n++] = *src++;
        }
    }
    dst[n] = '\0';
}

/* The shared path calls the documents "items" (in the field and in the
 * message, e.g. "query + items[3] is 9000 tokens"): the client sent
 * documents. */
static void name_fields(rpc_status *st)
{
    char field[sizeof st->field], message[sizeof st->message];
    rename_items(field, sizeof field, st->field);
    rename_items(message, sizeof message, st->message);
    memcpy(st->field, field, sizeof field);
    memcpy(st->message, message, sizeof message);
}

void http_rerank_init(http_rerank *h, service *svc, const rerank_profile *profile)
{
    h->svc = svc;
    h->profile = profile;
    h->endpoint = (http_endpoint){.path = "/v1/rerank",
                                  .handler = {.path = "/http/rerank",
                                              .shape = CALL_UNARY,
                                              .counts_as_scoring = true,
                                              .ctx = h,
                                              .free_state = state_free},
                                  .on_body = on_body,
                                  .render = render,
                                  .name_fields = name_fields};
}
