/*
 * json_request.h — the HTTP API's request bodies, read from JSON into what
 * the shared path takes:
 *
 * - POST /v1/score → an lmscore.v1.ScoreRequest: the seeds' fields (query,
 *   items, label_token_ids, apply_softmax, item_first, model) and lmscore's
 *   own under their proto names (label_texts, return_logprobs, algorithm as
 *   an enum name or number). A query or item is a string (text) or an array
 *   of token ids; which kinds may mix is the shared conversion's to say.
 * - the rerank paths → a rerank_request, in one of three dialects:
 *   POST /v1/rerank (Cohere v1, Jina, vLLM): query, documents as strings
 *   or objects, rank_fields (the object members scored, joined as Cohere
 *   joins them: "name: value" lines; default the text member alone),
 *   top_n, return_documents (default true), model; POST /v2/rerank (Cohere v2): query, documents as
 * strings, top_n, max_tokens_per_doc, model; POST /rerank (TEI): query, texts, return_text,
 * raw_scores, truncate, truncation_direction ("Left" or "Right", anything else
 * invalid_truncation_direction). vLLM's truncate_prompt_tokens (-1: the server's limit) on
 * /v1/score and /v1/rerank.
 *
 * A required member that is absent (or null) is refused, missing_field
 * naming it: a score's query and items, a rerank's query and documents
 * (texts). Other unknown members are skipped, as proto3's JSON mapping
 * does, and null is the same as absent. Everything is allocated within the
 * decode budget (message_too_large past it) and freed the usual way;
 * *model is the request's "model" (NULL when absent), for the caller to
 * check and free. Errors are json_reader's, with the field that holds the
 * bad value (e.g. "items[2]", "documents[0].text").
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

typedef enum {
    RERANK_COHERE,    /* /v1/rerank */
    RERANK_COHERE_V2, /* /v2/rerank */
    RERANK_TEI,       /* /rerank */
} rerank_dialect;

/* Cohere v2's default max_tokens_per_doc, as Cohere's. */
#define RERANK_MAX_TOKENS_PER_DOC 4096

typedef struct {
    char *query;
    char **documents; /* the texts scored */
    /* Cohere v1: [n_documents] a document object's JSON as sent (answered
     * as it came), NULL for a string; NULL when every one is a string. */
    char **objects;
    size_t n_documents;
    char **rank_fields; /* Cohere v1's */
    size_t n_rank_fields;
    size_t n_scored;       /* n_documents, kept when the documents are dropped */
    int64_t top_n;         /* 0: every document */
    bool return_documents; /* Cohere v1's default true (as Jina and vLLM), else false */
    bool raw_scores;       /* TEI's: the log-odds instead of the probability */
    /* Truncation: said tells whether the request chose (else the server's
     * --truncate-documents does); with truncate, how (max_item_tokens and
     * max_sequence_tokens 0: no limit but the server's). */
    bool truncation_said, truncate;
    Lmscore__V1__Truncation truncation;
} rerank_request;

lms_status json_rerank_request(rerank_dialect dialect, const char *body, size_t len,
                               decode_budget *budget, rerank_request *out, char **model,
                               lms_error *err);
/* Frees the documents (and only them). */
void rerank_request_drop_documents(rerank_request *r);
void rerank_request_free(rerank_request *r);

#endif
