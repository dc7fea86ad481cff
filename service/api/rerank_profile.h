/*
 * rerank_profile.h — how POST /v1/rerank scores a document against a
 * query: a prompt template holding {query} and then {document}, and label
 * texts, each one token. The relevance of a document is the probability of
 * the first label as the next token after the filled template: normalised
 * over the labels when there are several (Qwen3-Reranker's "yes" against
 * "no"), the model's own probability when there is one.
 *
 * The profile is set at start-up (--rerank-profile): a built-in name
 *
 *   yes-no          "Query: {query}\nDocument: {document}\nIs the document
 *                   relevant to the query? Answer:" with " yes", " no"
 *                   (any tokenizer where those are one token each: the
 *                   demo model's, Qwen's, Llama's)
 *   qwen3-reranker  Qwen3-Reranker's chat prompt with its default
 *                   instruction, "yes" against "no"
 *
 * or a JSON file {"template": "...{query}...{document}...", "labels":
 * ["yes", "no"]}. A request becomes a ScoreRequest whose query is the
 * template up to {document} (so the prefix cache holds it for every
 * document), whose items are the documents (with the spaces before
 * {document}) and whose item_suffix is the rest: a document cut to its
 * budget loses its own tokens, never the template's tail where the label
 * is read.
 */
#ifndef LMSCORED_RERANK_PROFILE_H
#define LMSCORED_RERANK_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "decode_budget.h"
#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"

#define RERANK_PROFILE_DEFAULT "yes-no"
/* More labels than this are refused: a relevance needs two. */
#define RERANK_MAX_LABELS 16

typedef struct {
    char *name;   /* the built-in's name, or the file's path */
    char *head;   /* the template before {query} */
    char *middle; /* from {query} to {document}, less trailing spaces */
    char *lead;   /* those spaces: a tokenizer groups a space with the word
                     after it, so they go with the document */
    char *tail;   /* the template after {document} */
    char *labels[RERANK_MAX_LABELS];
    size_t n_labels;
    int32_t label_ids[RERANK_MAX_LABELS]; /* set by rerank_profile_bind */
    bool bound;
    lms_error unbound; /* why rerank_profile_bind failed */
} rerank_profile;

/* spec: a built-in name, else a profile file; the default when empty.
 * Fails with err (field "rerank-profile") on an unreadable file or a
 * template without {query} then {document}, each once. */
lms_status rerank_profile_load(const char *spec, rerank_profile *out, lms_error *err);
void rerank_profile_free(rerank_profile *p);

/* Resolves the labels with e's tokenizer, each of which must make exactly
 * one token (label_not_single_token, no_tokenizer otherwise; also kept in
 * p->unbound for the requests to answer). */
lms_status rerank_profile_bind(rerank_profile *p, const lms_engine *e, lms_error *err);

/* rerank_profile_bind as the daemon does it once the model is loaded: a
 * profile that does not fit fails when it was asked for (asked: the
 * --rerank-profile flag was given); the default one only makes the rerank
 * calls answer why (logged here as a warning). */
lms_status rerank_profile_bind_serving(rerank_profile *p, const lms_engine *e, bool asked,
                                       lms_error *err);

/* The ScoreRequest that scores docs[0..n) against query, cut as truncation
 * says (NULL: never; copied) (allocated within budget; freed with
 * protobuf_c_message_free_unpacked). */
lms_status rerank_profile_request(const rerank_profile *p, const char *query, char *const *docs,
                                  size_t n_docs, const Lmscore__V1__Truncation *truncation,
                                  decode_budget *budget, Lmscore__V1__ScoreRequest **out,
                                  lms_error *err);

#endif
