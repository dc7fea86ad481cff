/*
 * peer_request.h — the peer benchmark's request: lmscore-local's JSON
 * request format (tools/lmscore-local.c) restricted to token ids, so that
 * the same file reproduces either side's run: {"query": [ids], "items":
 * [[ids], ...], "label_token_ids": [ids]}.
 */
#ifndef LMS_BENCH_PEER_REQUEST_H
#define LMS_BENCH_PEER_REQUEST_H

#include "lmscore.h"

typedef struct {
    lms_score_request req; /* points into the buffers below */
    int32_t *ids;          /* every token id of the request */
    lms_tokens *items;
} peer_request;

/* Reads path into *out (zeroed first); free with peer_request_free. */
lms_status peer_request_read(const char *path, peer_request *out, lms_error *err);
void peer_request_free(peer_request *r);

/* The request's tokens: the query's and every item's. */
int64_t peer_request_tokens(const peer_request *r);

#endif
