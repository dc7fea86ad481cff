/*
 * http_rerank.h — POST /v1/rerank in the shape of Cohere's, Jina's and
 * vLLM's rerank APIs: {query, documents, top_n, return_documents} →
 * {model, results: [{index, relevance_score, document: {text}}], usage},
 * the results by relevance, highest first (ties by index). The documents
 * are scored as the items of one Score call through the start-up rerank
 * profile (rerank_profile.h), so the query's prefix is computed once.
 */
#ifndef LMSCORED_HTTP_RERANK_H
#define LMSCORED_HTTP_RERANK_H

#include "http_server.h"
#include "rerank_profile.h"
#include "service.h"

typedef struct {
    http_endpoint endpoint;
    service *svc;
    const rerank_profile *profile; /* bound to the engine before serving */
} http_rerank;

void http_rerank_init(http_rerank *h, service *svc, const rerank_profile *profile);

#endif
