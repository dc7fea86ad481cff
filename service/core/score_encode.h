/*
 * score_encode.h — engine results → lmscore.v1 response messages. The
 * messages are views: their float arrays point into the engine's result
 * (or the on_items callback's arrays), so they must be sent before those
 * go away. Only the small per-item structs are allocated.
 */
#ifndef LMSCORED_SCORE_ENCODE_H
#define LMSCORED_SCORE_ENCODE_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"
#include "google/protobuf/duration.pb-c.h"
#include "lmscore/v1/score.pb-c.h"

typedef struct {
    Lmscore__V1__ItemScores *items;
    Lmscore__V1__ItemScores **item_ptrs;
    int32_t *indices;
    size_t cap;
    Lmscore__V1__ScoreChunk chunk; /* its items/indices are the arrays above */
} score_chunk_view;

lms_status score_chunk_view_init(score_chunk_view *v, size_t cap, lms_error *err);
void score_chunk_view_free(score_chunk_view *v);
/* Views n items (n <= cap) with indices first_index.., n_labels floats
 * each; logprobs are included when with_logprobs. */
void score_chunk_view_fill(score_chunk_view *v, int64_t first_index, int32_t n, int32_t n_labels,
                           const float *scores, const float *logprobs, bool with_logprobs);

/* Where a call's time went in the server, in nanoseconds (the fields of
 * ServerTiming). */
typedef struct {
    int64_t queue_ns, prepare_ns, engine_ns;
} score_timing;

void score_timing_add(score_timing *sum, const score_timing *t);

/* A ServerTiming message over t; its durations live in the view. */
typedef struct {
    Lmscore__V1__ServerTiming msg;
    Google__Protobuf__Duration queue, prepare, engine;
} score_timing_view;

void score_timing_view_fill(score_timing_view *v, const score_timing *t);

/* Usage of one result added to u. */
void score_usage_add(Lmscore__V1__Usage *u, const lms_score_result *res);

/* The unary response over res, viewed through v (initialised with
 * cap >= res->n_items). */
void score_response_fill(Lmscore__V1__ScoreResponse *resp, Lmscore__V1__Usage *usage,
                         score_chunk_view *v, const lms_score_result *res, const int32_t *label_ids,
                         bool with_logprobs);

#endif
