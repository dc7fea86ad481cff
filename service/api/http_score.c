/*
 * http_score.c — the /v1/score endpoint (see http_score.h).
 */
#include "http_score.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "http_call.h"
#include "json_request.h"
#include "score_call.h"

/* What the answer needs of the request. */
typedef struct {
    bool return_logprobs;
} score_state;

static void on_body(call *c, const char *body, size_t len)
{
    http_score *h = call_ctx(c);
    lms_engine *engine = http_call_admit(h->svc, c);
    if (!engine) return;
    decode_budget budget;
    http_call_budget(h->svc, &budget);
    Lmscore__V1__ScoreRequest *req;
    char *model;
    lms_error err = {0};
    if (json_score_request(body, len, &budget, &req, &model, &err) != LMS_OK) {
        http_call_fail(c, &err);
        return;
    }
    score_state *state = NULL;
    if (http_call_check_model(c, h->svc, model) && !(state = malloc(sizeof *state))) {
        lms_fail(&err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
        http_call_fail(c, &err);
    }
    if (!state) {
        protobuf_c_message_free_unpacked(&req->base, NULL);
        return;
    }
    state->return_logprobs = req->return_logprobs;
    call_set_state(c, state);
    score_call_submit(h->svc, c, engine, req, NULL);
}

/* "name": [[...] per item] of the items' scores or logprobs. */
static void matrix(json_writer *w, const char *name, const Lmscore__V1__ScoreResponse *resp,
                   bool logprobs)
{
    json_key(w, name);
    json_array_open(w);
    for (size_t i = 0; i < resp->n_items; i++) {
        const Lmscore__V1__ItemScores *it = resp->items[i];
        size_t n = logprobs ? it->n_logprobs : it->n_scores;
        const float *v = logprobs ? it->logprobs : it->scores;
        json_array_open(w);
        for (size_t j = 0; j < n; j++)
            json_float(w, v[j]);
        json_array_close(w);
    }
    json_array_close(w);
}

/* A Duration in proto3's JSON form: seconds with up to 9 decimals and "s". */
static void duration(json_writer *w, const char *name, const Google__Protobuf__Duration *d)
{
    char text[40];
    snprintf(text, sizeof text, "%lld.%09ds", (long long)(d ? d->seconds : 0),
             d ? (int)d->nanos : 0);
    json_key(w, name);
    json_string(w, text);
}

static void render(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    const http_score *h = call_ctx(c);
    const score_state *state = call_state(c);
    const Lmscore__V1__ScoreResponse *resp = (const Lmscore__V1__ScoreResponse *)reply;
    json_object_open(w);
    json_key(w, "object");
    json_string(w, "scoring");
    http_call_model(w, h->svc);
    matrix(w, "scores", resp, false);
    if (state->return_logprobs) matrix(w, "logprobs", resp, true);
    json_key(w, "label_token_ids");
    json_array_open(w);
    for (size_t j = 0; j < resp->n_label_token_ids; j++)
        json_int(w, resp->label_token_ids[j]);
    json_array_close(w);
    http_call_usage(w, resp->usage);
    json_key(w, "created");
    json_int(w, (int64_t)time(NULL));
    json_key(w, "algorithm");
    const ProtobufCEnumValue *algo =
        protobuf_c_enum_descriptor_get_value(&lmscore__v1__algorithm__descriptor, resp->algorithm);
    json_string(w, algo ? algo->name : "ALGORITHM_UNSPECIFIED");
    json_key(w, "algorithm_reason");
    json_string(w, resp->algorithm_reason);
    if (resp->timing) {
        json_key(w, "timing");
        json_object_open(w);
        duration(w, "queue_time", resp->timing->queue_time);
        duration(w, "prepare_time", resp->timing->prepare_time);
        duration(w, "engine_time", resp->timing->engine_time);
        json_object_close(w);
    }
    json_object_close(w);
}

void http_score_init(http_score *h, service *svc)
{
    h->svc = svc;
    h->endpoint = (http_endpoint){.path = "/v1/score",
                                  .handler = {.path = "/http/score",
                                              .shape = CALL_UNARY,
                                              .counts_as_scoring = true,
                                              .ctx = h,
                                              .free_state = free},
                                  .on_body = on_body,
                                  .render = render};
}
