/*
 * score_request.h — lmscore.v1 request messages → engine requests: input
 * kinds (text or token ids, never mixed), server-side tokenization (the
 * query with the model's special tokens, items without), label texts →
 * single label ids, the algorithm enum. Everything produced is owned, so a
 * prepared request outlives the message it came from.
 *
 * The engine itself validates ids, limits and emptiness; what is checked
 * here is what only the wire format can get wrong.
 */
#ifndef LMSCORED_SCORE_REQUEST_H
#define LMSCORED_SCORE_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"

/* The fields ScoreRequest and ScoreItemsHeader have in common. */
typedef struct {
    const Lmscore__V1__Input *query;
    size_t n_label_token_ids;
    const int32_t *label_token_ids;
    size_t n_label_texts;
    char *const *label_texts;
    bool apply_softmax, item_first, return_logprobs;
    Lmscore__V1__Algorithm algorithm;
} score_header_fields;

typedef struct {
    bool text_inputs;
    int32_t *query_ids;
    int32_t query_len;
    int32_t *label_ids;
    int32_t n_labels;
    bool apply_softmax, item_first, return_logprobs;
    lms_algorithm algorithm;
} score_header;

typedef struct {
    lms_tokens *items;
    int32_t n_items;
    int64_t n_tokens; /* item tokens in all */
} score_items;

void score_header_fields_of_request(const Lmscore__V1__ScoreRequest *req, score_header_fields *f);
void score_header_fields_of_items_header(const Lmscore__V1__ScoreItemsHeader *h,
                                         score_header_fields *f);

lms_status score_header_prepare(const lms_engine *e, const score_header_fields *f,
                                score_header *out, lms_error *err);
void score_header_free(score_header *h);

/* items[i] is named "items[index_base + i]" in errors. */
lms_status score_items_prepare(const lms_engine *e, const score_header *h,
                               Lmscore__V1__Input *const *items, size_t n_items, int64_t index_base,
                               score_items *out, lms_error *err);
void score_items_free(score_items *it);

void score_request_build(const score_header *h, const score_items *it, lms_score_request *out);

Lmscore__V1__Algorithm score_algorithm_to_proto(lms_algorithm algo);

#endif
