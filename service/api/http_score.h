/*
 * http_score.h — POST /v1/score: the seeds' Score API (RFC-000) over HTTP.
 * The JSON request becomes a ScoreRequest (json_request.h) that the
 * scoring call scores as it does a gRPC Score's (score_call.h), and its
 * ScoreResponse becomes the seeds'
 * answer: {"object": "scoring", "model", "scores": [[...]], "usage",
 * "created"}, plus lmscore's own fields under their proto names
 * (label_token_ids, logprobs when asked for, algorithm, algorithm_reason,
 * timing). The numbers are the gRPC call's, bit for bit.
 */
#ifndef LMSCORED_HTTP_SCORE_H
#define LMSCORED_HTTP_SCORE_H

#include "http_server.h"
#include "service.h"

typedef struct {
    http_endpoint endpoint;
    service *svc;
} http_score;

void http_score_init(http_score *h, service *svc);

#endif
