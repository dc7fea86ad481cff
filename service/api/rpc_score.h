/*
 * rpc_score.h — lmscore.v1.ScoreService's scoring RPCs: Score (unary),
 * ScoreStream (server streaming) and ScoreItems (bidirectional). Requests
 * are decoded on the CQ thread, then checked, tokenized and scored on the
 * worker pool by the scoring call every door shares (score_call.h).
 */
#ifndef LMSCORED_RPC_SCORE_H
#define LMSCORED_RPC_SCORE_H

#include "call.h"
#include "service.h"

typedef struct {
    call_handler score;
    call_handler score_stream;
    call_handler score_items;
} rpc_score_handlers;

void rpc_score_init(rpc_score_handlers *h, service *svc);

#endif
