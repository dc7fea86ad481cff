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

/* The fields ScoreRequest and ScoreItemsHeader have in common, viewed in
 * the message (nothing is copied). */
typedef struct {
    const Lmscore__V1__Input *query;
    size_t n_label_token_ids;
    const int32_t *label_token_ids;
    size_t n_label_texts;
    char *const *label_texts;
    bool apply_softmax, item_first, return_logprobs;
    Lmscore__V1__Algorithm algorithm;
    const Lmscore__V1__Truncation *truncation; /* NULL: nothing is cut */
    const Lmscore__V1__Input *item_suffix;     /* NULL: none */
} score_header_fields;

/* The header fields of msg, a ScoreRequest or a ScoreItemsHeader: the two
 * messages name them alike, so one conversion serves both, and a field
 * that one of them lacks does not compile. */
#define SCORE_HEADER_FIELDS_OF(msg)                                                                \
    ((score_header_fields){                                                                        \
        .query = (msg)->query,                                                                     \
        .n_label_token_ids = (msg)->n_label_token_ids,                                             \
        .label_token_ids = (msg)->label_token_ids,                                                 \
        .n_label_texts = (msg)->n_label_texts,                                                     \
        .label_texts = (msg)->label_texts,                                                         \
        .apply_softmax = (msg)->apply_softmax,                                                     \
        .item_first = (msg)->item_first,                                                           \
        .return_logprobs = (msg)->return_logprobs,                                                 \
        .algorithm = (msg)->algorithm,                                                             \
        .truncation = (msg)->truncation,                                                           \
        .item_suffix = (msg)->item_suffix,                                                         \
    })

/* A prepared header: the engine request without its items, whose query
 * and label ids it owns, and what the answer needs besides. */
typedef struct {
    lms_score_request request;
    bool text_inputs;
    bool return_logprobs;
    int64_t max_text_bytes; /* what score_items_prepare holds item texts to */
    /* The item suffix: its text (joined to each item's before tokenizing,
     * so that an item that is not cut is tokenized as one text) and its
     * tokens alone (what a cut item ends with); n_suffix 0 without one. */
    char *suffix_text;
    int32_t *suffix;
    int32_t n_suffix;
    bool truncate;               /* the request asked for truncation */
    bool keep_end;               /* TRUNCATION_SIDE_LEFT */
    int32_t max_item_tokens;     /* 0: none of its own */
    int32_t max_sequence_tokens; /* the request's, within the engine's */
} score_header;

typedef struct {
    lms_tokens *items;
    int32_t n_items;
    int64_t n_tokens; /* item tokens in all */
    /* With truncation: [n_items] each item's own tokens kept and dropped
     * (dropped 0 for an item not cut); NULL otherwise. */
    int32_t *kept, *dropped;
    int64_t n_truncated; /* items cut */
} score_items;

/* The byte bound every text that enters passes before it is tokenized:
 * the query, items and label texts of every RPC (through the prepare
 * functions below), Tokenize's text, and the texts of the HTTP API. A text
 * of more than max_bytes bytes is INVALID_ARGUMENT, reason text_too_long,
 * naming field, and is never tokenized: tokenizing costs time and memory in
 * proportion to the text before any token limit (sequence_too_long) can
 * refuse it. */
lms_status score_text_check(const char *text, int64_t max_bytes, const char *field, lms_error *err);

/* Texts longer than max_text_bytes (the query's, the labels' and, later,
 * the items') are refused by score_text_check. */
lms_status score_header_prepare(const lms_engine *e, const score_header_fields *f,
                                int64_t max_text_bytes, score_header *out, lms_error *err);
void score_header_free(score_header *h);

/* items[i] is named "items[index_base + i]" in errors. Each item is
 * followed by h's suffix; with h->truncate an item over its budget
 * (Truncation's comment in score.proto) keeps that many of its own tokens,
 * from the end h->keep_end says, and then the suffix's tokens: the same
 * tokens as the suffix of an item that needed no cut. The cuts count in
 * the metrics (lmscore_truncated_items_total). */
lms_status score_items_prepare(const lms_engine *e, const score_header *h,
                               Lmscore__V1__Input *const *items, size_t n_items, int64_t index_base,
                               score_items *out, lms_error *err);
void score_items_free(score_items *it);

/* The engine request of h with the items it (both still own their ids). */
lms_score_request score_request_with_items(const score_header *h, const score_items *it);

Lmscore__V1__Algorithm score_algorithm_to_proto(lms_algorithm algo);

#endif
