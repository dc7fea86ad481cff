/*
 * rerank_order.h — a rerank's answer read off the ScoreResponse of its
 * documents, the same for every door (HTTP's three shapes and gRPC's
 * Rerank): the documents by relevance, highest first, equal ones by index;
 * a document's relevance (the first label's score) and its log-odds.
 */
#ifndef LMSCORED_RERANK_ORDER_H
#define LMSCORED_RERANK_ORDER_H

#include <stddef.h>

#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"
#include "status_details.h"

typedef struct {
    float relevance;
    size_t index;
} rerank_ranked;

/* resp's items by relevance (malloc'ed, resp->n_items of them, at least
 * one slot); NULL when out of memory. */
rerank_ranked *rerank_order(const Lmscore__V1__ScoreResponse *resp);

/* TEI's raw score: log(p / (1 - p)) of the relevance p, from the item's
 * log-probabilities (exact where p rounds to 1). */
float rerank_log_odds(const Lmscore__V1__ItemScores *it);

/* The shared path calls the documents "items" (in the field and in the
 * message, e.g. "query + items[3] is 9000 tokens"): the client sent
 * documents (TEI: texts), the name that replaces it here. */
void rerank_name_items(rpc_status *st, const char *documents);

/* How many of n results a top_n shows (0: all). */
size_t rerank_shown(int64_t top_n, size_t n);

#endif
