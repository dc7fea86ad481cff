/*
 * json_request.h — the HTTP API's request bodies, read from JSON into what
 * the shared path takes:
 *
 * - POST /v1/score → an lmscore.v1.ScoreRequest: the seeds' fields (query,
 *   items, label_token_ids, apply_softmax, item_first, model) and lmscore's
 *   own under their proto names (label_texts, return_logprobs, algorithm as
 *   an enum name or number). A query or item is a string (text) or an array
 *   of token ids; which kinds may mix is the shared conversion's to say.
 * - POST /v1/rerank → a rerank_request (Cohere/Jina/vLLM: query, documents
 *   as strings or {"text": ...} objects, top_n, return_documents, model).
 *
 * Unknown members are skipped, null is the same as absent. Everything is
 * allocated within the decode budget (message_too_large past it) and freed
 * the usual way; *model is the request's "model" (NULL when absent), for
 * the caller to check and free. Errors are json_reader's, with the field
 * that holds the bad value (e.g. "items[2]", "documents[0].text").
 */
#ifndef LMSCORED_JSON_REQUEST_H
#define LMSCORED_JSON_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode_budget.h"
#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"

/* Reads body (len bytes) as a /v1/score request; *out is freed with
 * protobuf_c_message_free_unpacked(&(*out)->base, NULL). */
lms_status json_score_request(const char *body, size_t len, decode_budget *budget,
                              Lmscore__V1__ScoreRequest **out, char **model, lms_error *err);

typedef struct {
    char *query;
    char **documents;
    size_t n_documents;
    int64_t top_n;         /* 0: every document */
    bool return_documents; /* default true, as Jina and vLLM answer */
} rerank_request;

lms_status json_rerank_request(const char *body, size_t len, decode_budget *budget,
                               rerank_request *out, char **model, lms_error *err);
/* Frees the documents (and only them). */
void rerank_request_drop_documents(rerank_request *r);
void rerank_request_free(rerank_request *r);

#endif
