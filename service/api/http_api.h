/*
 * http_api.h — the HTTP API as the daemon runs it (--http-listen): the
 * endpoints (POST /v1/score; POST /v1/rerank, /v2/rerank, /rerank; GET
 * /health, /v1/models, /v1/models/{id}, /openapi.json) and their server,
 * set up around the daemon's phases: created with the other handlers (for
 * the metrics), listening once the gRPC server does, stopped after the
 * calls have ended. The rerank profile is the daemon's (gRPC's Rerank uses
 * it too).
 */
#ifndef LMSCORED_HTTP_API_H
#define LMSCORED_HTTP_API_H

#include <stddef.h>

#include "api_keys.h"
#include "call.h"
#include "config.h"
#include "rerank_profile.h"
#include "service.h"

typedef struct http_api http_api;

#define HTTP_API_ENDPOINTS 8

/* Prepares the endpoints, the rerank paths with profile (kept by
 * pointer). */
lms_status http_api_create(const lmscored_config *cfg, service *svc, const api_keys *keys,
                           const rerank_profile *profile, http_api **out, lms_error *err);
/* The endpoints' call handlers (HTTP_API_ENDPOINTS of them), whose paths
 * name them in the metrics. */
const call_handler *http_api_handler(const http_api *a, size_t i);
/* Listens (and logs "HTTP listening" with the port). */
lms_status http_api_start(http_api *a, lms_error *err);
/* Stops the server (the calls must have ended); NULL is a no-op. */
void http_api_stop(http_api *a);
void http_api_free(http_api *a);

#endif
