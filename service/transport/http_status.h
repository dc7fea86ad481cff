/*
 * http_status.h — a call's status as the HTTP API answers it: the HTTP
 * status a client expects for it, and the JSON error body, which is
 * google.rpc.Status in its JSON form (as Google's HTTP APIs and
 * grpc-gateway write it), so it carries the ErrorInfo a gRPC client gets:
 *
 *     {"error": {"code": 400, "status": "INVALID_ARGUMENT",
 *                "message": "items[1]: token id 151936 ...",
 *                "details": [{"@type": "type.googleapis.com/google.rpc.ErrorInfo",
 *                             "reason": "token_id_exceeds_vocab", "domain": "lmscore",
 *                             "metadata": {"field": "items[1]"}}]}}
 */
#ifndef LMSCORED_HTTP_STATUS_H
#define LMSCORED_HTTP_STATUS_H

#include "http1_parser.h"
#include "json_writer.h"
#include "status_details.h"

/* 400 bad input, 401 no or wrong API key, 404 no such path (UNIMPLEMENTED
 * not_found, as gRPC answers an unknown method) or model, 405 the wrong
 * method (UNIMPLEMENTED method_not_allowed), 501 a transfer coding not served, 505 an
 * HTTP version not served, 413 a request or answer over
 * the size limits (414 its path, 431 its headers), 429 the queue is full, 503 not ready, draining
 * or out of memory, 504 the deadline passed, 499 the client went away, 500 otherwise. */
unsigned http_status_of(const rpc_status *st);
/* A refusal of the HTTP parser as a status whose HTTP status is e's:
 * INVALID_ARGUMENT (400), UNAUTHENTICATED (401), RESOURCE_EXHAUSTED (414,
 * 431), UNIMPLEMENTED (501, 505), with e's reason and message. */
void http_status_from_parse(const http1_error *e, rpc_status *st);
/* The error body of st, into w. */
void http_status_json(const rpc_status *st, json_writer *w);

#endif
