/*
 * http_info.h — the HTTP API's GET endpoints, which score nothing:
 *
 *   GET /health        200 {"status": "SERVING"} once the model is loaded
 *                      and warmed, as gRPC health says SERVING; else 503
 *                      with the not_ready or draining error (Retry-After).
 *                      Open: no API key, as gRPC health.
 *   GET /v1/models     OpenAI's model list: {"object": "list", "data":
 *                      [{"id", "object": "model", "created", "owned_by"}]},
 *                      one entry per served name (--served-model-name).
 *                      Needs the API key, as reflection does.
 *   GET /v1/models/ID  OpenAI's model retrieve: the list's entry for ID
 *                      (percent-decoded), or 404 unknown_model naming
 *                      every served name. Needs the API key.
 *   GET /openapi.json  docs/openapi.json, carried in the daemon: the same
 *                      for every lmscored, so open.
 *
 * Their calls count in the metrics as service="http_info" (as gRPC health
 * is a service of its own), so that probes neither dilute nor raise the
 * scoring calls' error ratio.
 */
#ifndef LMSCORED_HTTP_INFO_H
#define LMSCORED_HTTP_INFO_H

#include <stdint.h>

#include "http_server.h"
#include "service.h"

typedef struct {
    http_endpoint health, models, model, openapi;
    service *svc;
    int64_t created; /* Unix time the daemon started, the models' "created" */
} http_info;

void http_info_init(http_info *h, service *svc);

#endif
