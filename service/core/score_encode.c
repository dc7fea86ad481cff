/*
 * score_encode.c — response message views over engine results (see
 * score_encode.h).
 */
#include "score_encode.h"

#include <stdlib.h>

#include "score_request.h"

lms_status score_chunk_view_init(score_chunk_view *v, size_t cap, lms_error *err)
{
    size_t n = cap ? cap : 1;
    v->items = calloc(n, sizeof *v->items);
    v->item_ptrs = calloc(n, sizeof *v->item_ptrs);
    v->indices = calloc(n, sizeof *v->indices);
    v->cap = cap;
    if (!v->items || !v->item_ptrs || !v->indices) {
        score_chunk_view_free(v);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory for %zu item scores", cap);
    }
    lmscore__v1__score_chunk__init(&v->chunk);
    return LMS_OK;
}

void score_chunk_view_free(score_chunk_view *v)
{
    free(v->items);
    free(v->item_ptrs);
    free(v->indices);
    v->items = NULL;
    v->item_ptrs = NULL;
    v->indices = NULL;
}

void score_chunk_view_fill(score_chunk_view *v, int64_t first_index, int32_t n, int32_t n_labels,
                           const float *scores, const float *logprobs, bool with_logprobs)
{
    for (int32_t i = 0; i < n; i++) {
        Lmscore__V1__ItemScores *it = &v->items[i];
        lmscore__v1__item_scores__init(it);
        it->n_scores = (size_t)n_labels;
        it->scores = (float *)scores + (size_t)i * (size_t)n_labels;
        if (with_logprobs) {
            it->n_logprobs = (size_t)n_labels;
            it->logprobs = (float *)logprobs + (size_t)i * (size_t)n_labels;
        }
        v->item_ptrs[i] = it;
        v->indices[i] = (int32_t)(first_index + i);
    }
    v->chunk.n_item_indices = (size_t)n;
    v->chunk.item_indices = v->indices;
    v->chunk.n_items = (size_t)n;
    v->chunk.items = v->item_ptrs;
}

void score_timing_add(score_timing *sum, const score_timing *t)
{
    sum->queue_ns += t->queue_ns;
    sum->prepare_ns += t->prepare_ns;
    sum->engine_ns += t->engine_ns;
}

static void duration_fill(Google__Protobuf__Duration *d, int64_t ns)
{
    google__protobuf__duration__init(d);
    d->seconds = ns / 1000000000;
    d->nanos = (int32_t)(ns % 1000000000);
}

void score_timing_view_fill(score_timing_view *v, const score_timing *t)
{
    lmscore__v1__server_timing__init(&v->msg);
    duration_fill(&v->queue, t->queue_ns);
    duration_fill(&v->prepare, t->prepare_ns);
    duration_fill(&v->engine, t->engine_ns);
    v->msg.queue_time = &v->queue;
    v->msg.prepare_time = &v->prepare;
    v->msg.engine_time = &v->engine;
}

void score_usage_add(Lmscore__V1__Usage *u, const lms_score_result *res)
{
    u->prompt_tokens += res->prompt_tokens;
    u->computed_tokens += res->computed_tokens;
    u->cached_tokens += res->cached_tokens;
}

void score_response_fill(Lmscore__V1__ScoreResponse *resp, Lmscore__V1__Usage *usage,
                         score_chunk_view *v, const lms_score_result *res, const int32_t *label_ids,
                         bool with_logprobs)
{
    lmscore__v1__score_response__init(resp);
    lmscore__v1__usage__init(usage);
    score_chunk_view_fill(v, 0, res->n_items, res->n_labels, res->scores, res->logprobs,
                          with_logprobs);
    resp->n_items = (size_t)res->n_items;
    resp->items = v->item_ptrs;
    resp->n_label_token_ids = (size_t)res->n_labels;
    resp->label_token_ids = (int32_t *)label_ids;
    resp->algorithm = score_algorithm_to_proto(res->algorithm);
    resp->algorithm_reason = (char *)res->algorithm_reason;
    score_usage_add(usage, res);
    resp->usage = usage;
}
