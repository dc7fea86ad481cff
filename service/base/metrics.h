/*
 * metrics.h — the daemon's counters: calls by method and status code,
 * errors by reason, items and tokens scored, the algorithm of each engine
 * call, latency histograms, calls and jobs in flight, rejections. Lock-free
 * on the paths every call takes (an error's reason takes a short lock);
 * updated from any thread, read by GetModelInfo (ServerStats), the systemd
 * STATUS= line and the /metrics exposition, which therefore agree.
 */
#ifndef LMSCORED_METRICS_H
#define LMSCORED_METRICS_H

#include <grpc/status.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

#define METRICS_N_CODES      17 /* gRPC status codes 0..16 */
#define METRICS_MAX_METHODS  24 /* served methods; one more slot counts unknown ones */
#define METRICS_MAX_REASONS  64 /* distinct error reasons kept; later ones count as "other" */
#define METRICS_REASON_SIZE  48
#define METRICS_N_BUCKETS    16 /* latency histogram bounds, +Inf not included */
#define METRICS_N_ALGORITHMS LMS_ALGO_COUNT

typedef enum {
    METRICS_CALL_TIME,
    METRICS_QUEUE_TIME,
    METRICS_ENGINE_TIME,
    METRICS_N_TIMES
} metrics_time;

typedef enum {
    METRICS_REJECT_QUEUE_FULL,
    METRICS_REJECT_DRAINING,
    METRICS_REJECT_NOT_READY,
    METRICS_N_REJECTIONS
} metrics_rejection;

typedef struct {
    int64_t buckets[METRICS_N_BUCKETS + 1]; /* per bucket, not cumulative; the last is +Inf */
    int64_t count;
    int64_t sum_ns;
} metrics_histogram;

/* What GetModelInfo's ServerStats and the STATUS= line report. */
typedef struct {
    int64_t requests_total; /* calls accepted */
    int64_t items_total;
    int64_t errors_by_code[METRICS_N_CODES];
    int32_t in_flight_calls; /* scoring calls */
    int32_t in_flight_jobs;
    double uptime_seconds;
} metrics_snapshot;

/* Everything else, for the exposition. */
typedef struct {
    int n_methods; /* registered ones; index n_methods counts unknown methods */
    const char *method_paths[METRICS_MAX_METHODS];
    int64_t finished[METRICS_MAX_METHODS + 1][METRICS_N_CODES];
    metrics_histogram times[METRICS_MAX_METHODS + 1][METRICS_N_TIMES];
    int n_reasons;
    char reasons[METRICS_MAX_REASONS][METRICS_REASON_SIZE];
    int64_t errors_by_reason[METRICS_MAX_REASONS][METRICS_N_CODES];
    int64_t errors_other_reason[METRICS_N_CODES];
    int64_t prompt_tokens, computed_tokens, cached_tokens;
    int64_t truncated_items, truncated_tokens; /* items cut, and their tokens dropped */
    int64_t engine_calls_by_algorithm[METRICS_N_ALGORITHMS]; /* index: lms_algorithm */
    int64_t rejections[METRICS_N_REJECTIONS];
    double model_load_seconds; /* 0 until the model is loaded */
} metrics_detail;

/* Upper bounds of the latency histograms' buckets, in seconds. */
extern const double metrics_bucket_seconds[METRICS_N_BUCKETS];

/* Starts the uptime clock and registers the methods served (their paths,
 * "/package.Service/Method"; at most METRICS_MAX_METHODS, kept by pointer). */
void metrics_init(const char *const *method_paths, int n_methods);
/* The index of a served method's path; NULL or unknown paths share one. */
int metrics_method_index(const char *path);

void metrics_request_started(void);
/* When the latest call was accepted (monotonic_ns), 0 before the first. */
int64_t metrics_last_request_ns(void);
/* A call is over: its status code, its error reason ("" for none) and how
 * long it lasted since it was accepted (observed as METRICS_CALL_TIME). */
void metrics_call_finished(int method, grpc_status_code code, const char *reason,
                           int64_t duration_ns);
/* An engine call that scored res (items, usage, algorithm). */
void metrics_scored(const lms_score_result *res);
/* Items cut to their budget (ScoreRequest.truncation) and the tokens they
 * dropped. */
void metrics_truncated(int64_t items, int64_t tokens_dropped);
/* One observation of a latency of the method: a call's whole time is
 * observed by metrics_call_finished, a job's wait in the queue by the worker
 * pool, an engine call's time where it scored. */
void metrics_observe(int method, metrics_time which, int64_t ns);
void metrics_rejected(metrics_rejection why);
void metrics_model_loaded(double seconds);
void metrics_scoring_call_enter(void);
void metrics_scoring_call_leave(void);
void metrics_job_enter(void);
void metrics_job_leave(void);
void metrics_snapshot_get(metrics_snapshot *out);
/* Fills out (some 20 KB: allocate it). */
void metrics_detail_get(metrics_detail *out);

/* "OK", "INVALID_ARGUMENT", ... */
const char *metrics_code_name(grpc_status_code code);
/* "queue_full", "draining", "not_ready" */
const char *metrics_rejection_name(metrics_rejection why);

#endif
