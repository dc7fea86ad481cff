/*
 * rpc_rerank.h — lmscore.v1.ScoreService's Rerank: a RerankRequest made
 * into the ScoreRequest the rerank profile makes of a document list (the
 * HTTP rerank paths' own, so the numbers are theirs, bit for bit, and so is
 * the truncation), scored by the shared scoring call, and answered as the
 * documents ranked by relevance.
 */
#ifndef LMSCORED_RPC_RERANK_H
#define LMSCORED_RPC_RERANK_H

#include "call.h"
#include "rerank_profile.h"
#include "service.h"

typedef struct {
    call_handler rerank;
    service *svc;
    const rerank_profile *profile; /* the daemon's; bound once the model is loaded */
} rpc_rerank_handlers;

void rpc_rerank_init(rpc_rerank_handlers *h, service *svc, const rerank_profile *profile);

#endif
