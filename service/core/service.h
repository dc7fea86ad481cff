/*
 * service.h — what the RPC handlers share: the configuration, the engine
 * (published once loaded), the worker pool and the daemon's phase
 * (loading → serving → draining).
 */
#ifndef LMSCORED_SERVICE_H
#define LMSCORED_SERVICE_H

#include <pthread.h>
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

/* service_job — the one job type of every engine-backed call: its request
 * message, run on a worker. The base owns what every job holds: a call
 * reference and an in-flight job count (taken by service_job_submit, given
 * back when the job is done), the request message and the job itself. A job
 * type embeds it first and adds its own fields. */
/* What a job's run did: finished (the job is freed), or a piece of its
 * work, the rest to run after the jobs queued meanwhile (AGAIN) or once its
 * client has taken what it was sent (PARKED, at a service_gate). */
typedef enum { SERVICE_JOB_DONE, SERVICE_JOB_AGAIN, SERVICE_JOB_PARKED } service_job_step;

typedef struct service_job {
    worker_job work; /* the pool's part */
    service_job_step (*run)(struct service_job *job);
    service *svc; /* set by service_job_submit */
    call *c;
    lms_engine *engine;
    ProtobufCMessage *request;
    void (*dispose)(struct service_job *job); /* optional: frees the type's own fields */
    bool counted;                             /* in ServerStats.in_flight_jobs */
} service_job;

/* A zeroed job of size bytes (a type that starts with a service_job) for
 * call c, owning request; run does its work. NULL when out of memory: the
 * call is then ended (RESOURCE_EXHAUSTED) and request freed. */
void *service_job_new(size_t size, call *c, lms_engine *engine, ProtobufCMessage *request,
                      service_job_step (*run)(service_job *job));

/* Queues job. On its worker, a job whose call should stop ends the call
 * (call_stopped_status) instead of running (also before each later piece of
 * its work); either way it is freed when done. On a full queue the call
 * ends with RESOURCE_EXHAUSTED (reason queue_full), the job is freed and
 * false is returned. */
bool service_job_submit(service *svc, service_job *job);

/* End the job's call with msg (OK) or st. The job leaves
 * ServerStats.in_flight_jobs first: a client that has the answer sees
 * counters without it. */
void service_job_reply(service_job *job, const ProtobufCMessage *msg);
void service_job_finish(service_job *job, const rpc_status *st);

/* service_gate — where a streaming call's job waits, holding no worker,
 * for its client to take the messages it queued (call_send_queued): the
 * call's on_sent opens the gate once none waits, its on_close once the
 * call is over (the job then ends as a stopped call). */
typedef struct {
    pthread_mutex_t mu;
    service_job *parked;
} service_gate;

void service_gate_init(service_gate *g);
void service_gate_destroy(service_gate *g);
/* The step after a piece of a streaming job's work: PARKED at g while
 * messages queued for its call wait, else AGAIN. */
service_job_step service_job_yield(service_job *job, service_gate *g);
void service_gate_open(service_gate *g, call *c, bool call_over);

#endif
