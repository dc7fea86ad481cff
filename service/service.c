/*
 * service.c — what every engine-backed call starts with: the phase check
 * and the hand-off to the worker pool.
 */
#include "service.h"

#include "metrics.h"

lms_engine *service_admit(service *svc, call *c, rpc_status *st)
{
    call_admit(c);
    switch ((service_phase)atomic_load(&svc->phase)) {
    case PHASE_SERVING:
        return svc->engine;
    case PHASE_LOADING:
        metrics_rejected(METRICS_REJECT_NOT_READY);
        rpc_status_set(st, GRPC_STATUS_UNAVAILABLE, "not_ready", NULL,
                       "the model is still loading; retry when health says SERVING");
        return NULL;
    case PHASE_DRAINING:
        break;
    }
    metrics_rejected(METRICS_REJECT_DRAINING);
    rpc_status_set(st, GRPC_STATUS_UNAVAILABLE, "draining", NULL,
                   "the server is shutting down; retry on another replica");
    return NULL;
}

ProtobufCMessage *service_begin(service *svc, call *c, const ProtobufCMessageDescriptor *desc,
                                const uint8_t *msg, size_t len, lms_engine **engine)
{
    rpc_status st;
    *engine = service_admit(svc, c, &st);
    if (!*engine) {
        call_finish(c, &st);
        return NULL;
    }
    return call_unpack(c, desc, msg, len);
}

bool service_submit(service *svc, call *c, worker_job *job)
{
    rpc_status st;
    if (!job) {
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        return false;
    }
    call_ref(c);
    metrics_job_enter();
    job->metrics_method = call_metrics_method(c);
    if (worker_pool_submit(svc->workers, job)) return true;
    metrics_job_leave();
    call_unref(c);
    metrics_rejected(METRICS_REJECT_QUEUE_FULL);
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "queue_full", NULL,
                   "the server's work queue is full (%d jobs waiting); retry later",
                   svc->cfg->queue_depth);
    call_finish(c, &st);
    return false;
}
