/*
 * metrics.h — the daemon's counters: calls, items, errors by status code,
 * calls and jobs in flight. Lock-free; updated from any thread, read by
 * GetModelInfo (ServerStats) and the systemd STATUS= line.
 */
#ifndef LMSCORED_METRICS_H
#define LMSCORED_METRICS_H

#include <grpc/status.h>
#include <stdint.h>

#define METRICS_N_CODES 17 /* gRPC status codes 0..16 */

typedef struct {
    int64_t requests_total;
    int64_t items_total;
    int64_t errors_by_code[METRICS_N_CODES];
    int32_t in_flight_calls; /* scoring calls */
    int32_t in_flight_jobs;
    double uptime_seconds;
} metrics_snapshot;

void metrics_init(void);
void metrics_request_started(void);
void metrics_call_finished(grpc_status_code code);
void metrics_items_scored(int64_t n);
void metrics_scoring_call_enter(void);
void metrics_scoring_call_leave(void);
void metrics_job_enter(void);
void metrics_job_leave(void);
int32_t metrics_scoring_calls_in_flight(void);
void metrics_snapshot_get(metrics_snapshot *out);

/* "OK", "INVALID_ARGUMENT", ... */
const char *metrics_code_name(grpc_status_code code);

#endif
