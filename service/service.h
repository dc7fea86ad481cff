/*
 * service.h — what the RPC handlers share: the configuration, the engine
 * (published once loaded), the worker pool and the daemon's phase
 * (loading → serving → draining).
 */
#ifndef LMSCORED_SERVICE_H
#define LMSCORED_SERVICE_H

#include <stdatomic.h>

#include "call.h"
#include "config.h"
#include "lmscore.h"
#include "status_details.h"
#include "workers.h"

typedef enum { PHASE_LOADING, PHASE_SERVING, PHASE_DRAINING } service_phase;

typedef struct {
    const lmscored_config *cfg;
    worker_pool *workers;
    int worker_threads; /* engine threads of each worker */
    lms_engine *engine; /* set before the phase becomes SERVING */
    atomic_int phase;
} service;

/* Admits call c (call_admit) and returns the engine when the daemon is
 * serving; otherwise NULL and st is set to UNAVAILABLE (reason not_ready or
 * draining). The call is counted before the phase is read, so a drain that
 * finds no admitted call has none left to wait for. */
lms_engine *service_admit(service *svc, call *c, rpc_status *st);

/* The start of every engine-backed unary call: admission and the decoded
 * request. NULL when the call has been ended instead (UNAVAILABLE, or
 * INVALID_ARGUMENT for a malformed message). */
ProtobufCMessage *service_begin(service *svc, call *c, const ProtobufCMessageDescriptor *desc,
                                const uint8_t *msg, size_t len, lms_engine **engine);

/* Queues job for call c, holding a call reference and an in-flight job
 * count for it (the job gives both back when done). On a full queue (reason
 * queue_full), or a NULL job (the caller's allocation failed), the call ends
 * with RESOURCE_EXHAUSTED and false is returned; job is then still the
 * caller's. */
bool service_submit(service *svc, call *c, worker_job *job);

#endif
