/*
 * service.c — what every engine-backed call starts with: admission (the
 * phase check) and the decoded request; and service_job, the one job type
 * that runs a call's work on the worker pool.
 */
#include "service.h"

#include <stdlib.h>

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

static void job_leave(service_job *job)
{
    if (!job->counted) return;
    job->counted = false;
    metrics_job_leave();
}

static void job_free(service_job *job)
{
    if (job->dispose) job->dispose(job);
    protobuf_c_message_free_unpacked(job->request, NULL);
    free(job);
}

/* The job leaves the in-flight count before its call's status is sent, so
 * a client that has the answer never sees the job still counted. */
void service_job_reply(service_job *job, const ProtobufCMessage *msg)
{
    job_leave(job);
    call_reply(job->c, msg);
}

void service_job_finish(service_job *job, const rpc_status *st)
{
    job_leave(job);
    call_finish(job->c, st);
}

/* Gives back what submit took and frees the job. */
static void job_end(service_job *job)
{
    job_leave(job);
    call_unref(job->c);
    job_free(job);
}

/* Ends a job whose call is over, or that can run no more. */
static void job_stop(service_job *job)
{
    rpc_status st;
    call_stopped_status(job->c, &st);
    service_job_finish(job, &st);
    job_end(job);
}

/* The worker's entry for every piece of a job's work: the should-stop
 * prologue, then the step run asks for. */
static void job_main(worker_job *work)
{
    service_job *job = (service_job *)work;
    if (call_should_stop(job->c)) {
        job_stop(job);
        return;
    }
    switch (job->run(job)) {
    case SERVICE_JOB_DONE:
        job_end(job);
        break;
    case SERVICE_JOB_AGAIN:
        if (!worker_pool_resubmit(job->svc->workers, &job->work)) job_stop(job);
        break;
    case SERVICE_JOB_PARKED:
        break; /* its gate resubmits it; it may run again already */
    }
}

void *service_job_new(size_t size, call *c, lms_engine *engine, ProtobufCMessage *request,
                      service_job_step (*run)(service_job *job))
{
    service_job *job = calloc(1, size);
    if (!job) {
        protobuf_c_message_free_unpacked(request, NULL);
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        return NULL;
    }
    job->work.run = job_main;
    job->run = run;
    job->c = c;
    job->engine = engine;
    job->request = request;
    return job;
}

bool service_job_submit(service *svc, service_job *job)
{
    /* the service the call was admitted by: a call's ctx is its handler's,
     * which for an HTTP endpoint is not the service */
    job->svc = svc;
    call_ref(job->c);
    job->counted = true;
    metrics_job_enter();
    job->work.metrics_method = call_metrics_method(job->c);
    if (worker_pool_submit(svc->workers, &job->work)) return true;
    job_leave(job);
    metrics_rejected(METRICS_REJECT_QUEUE_FULL);
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, "queue_full", NULL,
                   "the server's work queue is full (%d jobs waiting); retry later",
                   svc->cfg->queue_depth);
    call_finish(job->c, &st);
    call_unref(job->c);
    job_free(job);
    return false;
}

void service_gate_init(service_gate *g)
{
    pthread_mutex_init(&g->mu, NULL);
    g->parked = NULL;
}

void service_gate_destroy(service_gate *g)
{
    pthread_mutex_destroy(&g->mu);
}

service_job_step service_job_yield(service_job *job, service_gate *g)
{
    /* A call already over (its on_close may have opened the gate before
     * this job came to it) is not waited for: its next run ends it. */
    pthread_mutex_lock(&g->mu);
    bool wait = call_send_backlog(job->c) > 0 && !call_should_stop(job->c);
    if (wait) g->parked = job;
    pthread_mutex_unlock(&g->mu);
    return wait ? SERVICE_JOB_PARKED : SERVICE_JOB_AGAIN;
}

void service_gate_open(service_gate *g, call *c, bool call_over)
{
    pthread_mutex_lock(&g->mu);
    service_job *job = g->parked;
    if (job && (call_over || call_send_backlog(c) == 0))
        g->parked = NULL;
    else
        job = NULL;
    pthread_mutex_unlock(&g->mu);
    /* A call that is over needs no worker to end its job (and the pool may
     * be stopping). */
    if (job && (call_over || !worker_pool_resubmit(job->svc->workers, &job->work))) job_stop(job);
}
