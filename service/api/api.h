/*
 * api/ — the handlers of both doors. gRPC: lmscore.v1.ScoreService's
 * scoring RPCs (rpc_score), Rerank (rpc_rerank) and Tokenize and
 * GetModelInfo (rpc_info),
 * grpc.health.v1 (health), server reflection (reflection, over the
 * descriptor pool of descriptors). HTTP: POST /v1/score (http_score), the
 * rerank paths (http_rerank), GET /health, /v1/models and /openapi.json
 * (http_info); both doors' rerank: the profile (rerank_profile) and the
 * ranking (rerank_order); what every endpoint does
 * around the shared path (http_call), the request bodies read from JSON
 * (json_request), and the HTTP API as the daemon runs it (http_api).
 *
 * Includes: core/, transport/, base/. A door's handlers include no other
 * door's: an HTTP file (http_*) includes no gRPC handler (rpc_*), and the
 * other way round; what both need is core/'s (score_call.h).
 */
#ifndef LMSCORED_API_H
#define LMSCORED_API_H

#include "descriptors.h"
#include "health.h"
#include "http_api.h"
#include "reflection.h"
#include "rerank_profile.h"
#include "rpc_info.h"
#include "rpc_rerank.h"
#include "rpc_score.h"

#endif
