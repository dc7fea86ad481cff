/*
 * metrics.c — process-wide atomic counters (see metrics.h).
 */
#include "metrics.h"

#include <stdatomic.h>
#include <time.h>

static _Atomic int64_t requests_total;
static _Atomic int64_t items_total;
static _Atomic int64_t errors_by_code[METRICS_N_CODES];
static _Atomic int32_t in_flight_calls;
static _Atomic int32_t in_flight_jobs;
static struct timespec started;

static const char *const code_names[METRICS_N_CODES] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

void metrics_init(void)
{
    clock_gettime(CLOCK_MONOTONIC, &started);
}

void metrics_request_started(void)
{
    atomic_fetch_add(&requests_total, 1);
}

void metrics_call_finished(grpc_status_code code)
{
    if (code != GRPC_STATUS_OK && (unsigned)code < METRICS_N_CODES)
        atomic_fetch_add(&errors_by_code[code], 1);
}

void metrics_items_scored(int64_t n)
{
    atomic_fetch_add(&items_total, n);
}

void metrics_scoring_call_enter(void)
{
    atomic_fetch_add(&in_flight_calls, 1);
}

void metrics_scoring_call_leave(void)
{
    atomic_fetch_sub(&in_flight_calls, 1);
}

void metrics_job_enter(void)
{
    atomic_fetch_add(&in_flight_jobs, 1);
}

void metrics_job_leave(void)
{
    atomic_fetch_sub(&in_flight_jobs, 1);
}

int32_t metrics_scoring_calls_in_flight(void)
{
    return atomic_load(&in_flight_calls);
}

void metrics_snapshot_get(metrics_snapshot *out)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    out->requests_total = atomic_load(&requests_total);
    out->items_total = atomic_load(&items_total);
    for (int i = 0; i < METRICS_N_CODES; i++)
        out->errors_by_code[i] = atomic_load(&errors_by_code[i]);
    out->in_flight_calls = atomic_load(&in_flight_calls);
    out->in_flight_jobs = atomic_load(&in_flight_jobs);
    out->uptime_seconds =
        (double)(now.tv_sec - started.tv_sec) + (double)(now.tv_nsec - started.tv_nsec) * 1e-9;
}

const char *metrics_code_name(grpc_status_code code)
{
    return (unsigned)code < METRICS_N_CODES ? code_names[code] : "UNKNOWN";
}
