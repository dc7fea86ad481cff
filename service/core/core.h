/*
 * core/ — what both doors share below their handlers: the daemon's phases,
 * admission, engine jobs and the gates where streams wait (service), the
 * worker pool (workers), lmscore.v1 messages to engine requests and engine
 * results to messages (score_request, score_encode), and the scoring call
 * that every door hands its decoded request to (score_call).
 *
 * Includes: transport/, base/. Knows no door's handler: a gRPC method or an
 * HTTP endpoint is api/'s.
 */
#ifndef LMSCORED_CORE_H
#define LMSCORED_CORE_H

#include "score_call.h"
#include "service.h"
#include "workers.h"

#endif
