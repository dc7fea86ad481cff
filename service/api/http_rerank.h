/*
 * http_rerank.h — the rerank paths, each in the shape its clients speak:
 *
 *   POST /v1/rerank  Cohere v1, Jina, vLLM: {query, documents, top_n,
 *                    return_documents, model} → {model, results: [{index,
 *                    relevance_score, document: {text}}], usage}
 *   POST /v2/rerank  Cohere v2: {model, query, documents, top_n,
 *                    max_tokens_per_doc} → {id, results: [{index,
 *                    relevance_score}], meta: {api_version, tokens}}
 *   POST /rerank     TEI: {query, texts, return_text, raw_scores, truncate}
 *                    → [{index, score, text}]
 *
 * The results by relevance, highest first (ties by index). The documents
 * are scored as the items of one Score call through the start-up rerank
 * profile (rerank_profile.h), so the query's prefix is computed once.
 */
#ifndef LMSCORED_HTTP_RERANK_H
#define LMSCORED_HTTP_RERANK_H

#include "http_server.h"
#include "json_request.h"
#include "rerank_profile.h"
#include "service.h"

typedef struct {
    http_endpoint endpoint;
    service *svc;
    const rerank_profile *profile; /* bound to the engine before serving */
    rerank_dialect dialect;
} http_rerank;

void http_rerank_init(http_rerank *h, service *svc, const rerank_profile *profile,
                      rerank_dialect dialect);

#endif
