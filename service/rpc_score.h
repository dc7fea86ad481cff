/*
 * rpc_score.h — lmscore.v1.ScoreService's scoring RPCs: Score (unary),
 * ScoreStream (server streaming) and ScoreItems (bidirectional). Requests
 * are decoded on the CQ thread, then checked, tokenized and scored on the
 * worker pool.
 */
#ifndef LMSCORED_RPC_SCORE_H
#define LMSCORED_RPC_SCORE_H

#include "call.h"
#include "lmscore/v1/score.pb-c.h"
#include "service.h"

typedef struct {
    call_handler score;
    call_handler score_stream;
    call_handler score_items;
} rpc_score_handlers;

void rpc_score_init(rpc_score_handlers *h, service *svc);

/* Scores req (taken over) for call c, admitted by service_admit (engine is
 * what it returned), as a Score request decoded from gRPC is: the door
 * other than gRPC (the HTTP server) decodes its own requests, and from
 * here on shares everything with Score, down to the ScoreResponse that
 * ends the call. */
void rpc_score_submit(service *svc, call *c, lms_engine *engine, Lmscore__V1__ScoreRequest *req);

#endif
