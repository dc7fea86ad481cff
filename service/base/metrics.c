/*
 * metrics.c — process-wide counters (see metrics.h). Every counter is an
 * atomic that only grows (gauges move both ways), so a reader sees each
 * value consistent on its own; the error-reason table is append-only under
 * a lock that only failing calls take.
 */
#include "metrics.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "clock.h"

const double metrics_bucket_seconds[METRICS_N_BUCKETS] = {
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

typedef struct {
    _Atomic int64_t buckets[METRICS_N_BUCKETS + 1];
    _Atomic int64_t sum_ns;
} histogram;

static _Atomic int64_t requests_total;
static _Atomic int64_t last_request_ns; /* monotonic; 0: none yet */
static _Atomic int64_t items_total;
static _Atomic int64_t errors_by_code[METRICS_N_CODES];
static _Atomic int32_t in_flight_calls;
static _Atomic int32_t in_flight_jobs;
static int64_t started_ns;

static int n_methods;
static const char *method_paths[METRICS_MAX_METHODS];
static _Atomic int64_t finished[METRICS_MAX_METHODS + 1][METRICS_N_CODES];
static histogram times[METRICS_MAX_METHODS + 1][METRICS_N_TIMES];
static int64_t bucket_ns[METRICS_N_BUCKETS];

static pthread_mutex_t reasons_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_reasons; /* guarded by reasons_mu, as are the names */
static char reasons[METRICS_MAX_REASONS][METRICS_REASON_SIZE];
static _Atomic int64_t errors_by_reason[METRICS_MAX_REASONS][METRICS_N_CODES];
static _Atomic int64_t errors_other_reason[METRICS_N_CODES];

static _Atomic int64_t prompt_tokens, computed_tokens, cached_tokens;
static _Atomic int64_t truncated_items, truncated_tokens;
static _Atomic int64_t engine_calls_by_algorithm[METRICS_N_ALGORITHMS];
static _Atomic int64_t rejections[METRICS_N_REJECTIONS];
static _Atomic int64_t model_load_ns;

static const char *const code_names[METRICS_N_CODES] = {
    "OK",        "CANCELLED",      "UNKNOWN",           "INVALID_ARGUMENT",   "DEADLINE_EXCEEDED",
    "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED",   "OUT_OF_RANGE",   "UNIMPLEMENTED",     "INTERNAL",           "UNAVAILABLE",
    "DATA_LOSS", "UNAUTHENTICATED"};

static const char *const rejection_names[METRICS_N_REJECTIONS] = {"queue_full", "draining",
                                                                  "not_ready"};

void metrics_init(const char *const *paths, int n)
{
    started_ns = monotonic_ns();
    n_methods = n < METRICS_MAX_METHODS ? n : METRICS_MAX_METHODS;
    for (int i = 0; i < n_methods; i++)
        method_paths[i] = paths[i];
    for (int i = 0; i < METRICS_N_BUCKETS; i++)
        bucket_ns[i] = (int64_t)(metrics_bucket_seconds[i] * 1e9 + 0.5);
}

int metrics_method_index(const char *path)
{
    for (int i = 0; path && i < n_methods; i++)
        if (strcmp(method_paths[i], path) == 0) return i;
    return n_methods;
}

static void observe(histogram *h, int64_t ns)
{
    int b = 0;
    while (b < METRICS_N_BUCKETS && ns > bucket_ns[b])
        b++;
    atomic_fetch_add_explicit(&h->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, ns, memory_order_relaxed);
}

void metrics_request_started(void)
{
    atomic_fetch_add(&requests_total, 1);
    atomic_store(&last_request_ns, monotonic_ns());
}

int64_t metrics_last_request_ns(void)
{
    return atomic_load(&last_request_ns);
}

/* The slot of reason, added when new; -1 once the table is full. */
static int reason_slot(const char *reason)
{
    pthread_mutex_lock(&reasons_mu);
    int i = 0;
    while (i < n_reasons && strcmp(reasons[i], reason) != 0)
        i++;
    if (i == n_reasons) {
        if (n_reasons == METRICS_MAX_REASONS) {
            i = -1;
        } else {
            size_t len = strnlen(reason, METRICS_REASON_SIZE - 1);
            memcpy(reasons[i], reason, len);
            reasons[i][len] = '\0';
            n_reasons++;
        }
    }
    pthread_mutex_unlock(&reasons_mu);
    return i;
}

void metrics_call_finished(int method, grpc_status_code code, const char *reason,
                           int64_t duration_ns)
{
    if ((unsigned)code >= METRICS_N_CODES) code = GRPC_STATUS_UNKNOWN;
    if (method < 0 || method > n_methods) method = n_methods;
    if (code != GRPC_STATUS_OK) {
        atomic_fetch_add(&errors_by_code[code], 1);
        int slot = reason_slot(reason ? reason : "");
        atomic_fetch_add(slot < 0 ? &errors_other_reason[code] : &errors_by_reason[slot][code], 1);
    }
    atomic_fetch_add_explicit(&finished[method][code], 1, memory_order_relaxed);
    observe(&times[method][METRICS_CALL_TIME], duration_ns);
}

void metrics_scored(const lms_score_result *res)
{
    atomic_fetch_add(&items_total, res->n_items);
    atomic_fetch_add_explicit(&prompt_tokens, res->prompt_tokens, memory_order_relaxed);
    atomic_fetch_add_explicit(&computed_tokens, res->computed_tokens, memory_order_relaxed);
    atomic_fetch_add_explicit(&cached_tokens, res->cached_tokens, memory_order_relaxed);
    if ((unsigned)res->algorithm < METRICS_N_ALGORITHMS)
        atomic_fetch_add_explicit(&engine_calls_by_algorithm[res->algorithm], 1,
                                  memory_order_relaxed);
}

void metrics_truncated(int64_t items, int64_t tokens_dropped)
{
    atomic_fetch_add_explicit(&truncated_items, items, memory_order_relaxed);
    atomic_fetch_add_explicit(&truncated_tokens, tokens_dropped, memory_order_relaxed);
}

void metrics_observe(int method, metrics_time which, int64_t ns)
{
    if (method < 0 || method > n_methods) method = n_methods;
    observe(&times[method][which], ns);
}

void metrics_rejected(metrics_rejection why)
{
    atomic_fetch_add(&rejections[why], 1);
}

void metrics_model_loaded(double seconds)
{
    atomic_store(&model_load_ns, (int64_t)(seconds * 1e9));
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

void metrics_snapshot_get(metrics_snapshot *out)
{
    const int64_t now_ns = monotonic_ns();
    out->requests_total = atomic_load(&requests_total);
    out->items_total = atomic_load(&items_total);
    for (int i = 0; i < METRICS_N_CODES; i++)
        out->errors_by_code[i] = atomic_load(&errors_by_code[i]);
    out->in_flight_calls = atomic_load(&in_flight_calls);
    out->in_flight_jobs = atomic_load(&in_flight_jobs);
    out->uptime_seconds = (double)(now_ns - started_ns) * 1e-9;
}

static void histogram_get(histogram *h, metrics_histogram *out)
{
    /* The count is the buckets' total, so that the +Inf bucket and _count
     * agree even while observations land (a separate count could differ). */
    out->count = 0;
    for (int b = 0; b <= METRICS_N_BUCKETS; b++) {
        out->buckets[b] = atomic_load(&h->buckets[b]);
        out->count += out->buckets[b];
    }
    out->sum_ns = atomic_load(&h->sum_ns);
}

void metrics_detail_get(metrics_detail *out)
{
    out->n_methods = n_methods;
    for (int m = 0; m < n_methods; m++)
        out->method_paths[m] = method_paths[m];
    for (int m = 0; m <= n_methods; m++) {
        for (int c = 0; c < METRICS_N_CODES; c++)
            out->finished[m][c] = atomic_load(&finished[m][c]);
        for (int t = 0; t < METRICS_N_TIMES; t++)
            histogram_get(&times[m][t], &out->times[m][t]);
    }
    pthread_mutex_lock(&reasons_mu);
    out->n_reasons = n_reasons;
    memcpy(out->reasons, reasons, sizeof reasons);
    pthread_mutex_unlock(&reasons_mu);
    for (int r = 0; r < out->n_reasons; r++)
        for (int c = 0; c < METRICS_N_CODES; c++)
            out->errors_by_reason[r][c] = atomic_load(&errors_by_reason[r][c]);
    for (int c = 0; c < METRICS_N_CODES; c++)
        out->errors_other_reason[c] = atomic_load(&errors_other_reason[c]);
    out->prompt_tokens = atomic_load(&prompt_tokens);
    out->computed_tokens = atomic_load(&computed_tokens);
    out->cached_tokens = atomic_load(&cached_tokens);
    out->truncated_items = atomic_load(&truncated_items);
    out->truncated_tokens = atomic_load(&truncated_tokens);
    for (int a = 0; a < METRICS_N_ALGORITHMS; a++)
        out->engine_calls_by_algorithm[a] = atomic_load(&engine_calls_by_algorithm[a]);
    for (int r = 0; r < METRICS_N_REJECTIONS; r++)
        out->rejections[r] = atomic_load(&rejections[r]);
    out->model_load_seconds = (double)atomic_load(&model_load_ns) * 1e-9;
}

const char *metrics_code_name(grpc_status_code code)
{
    return (unsigned)code < METRICS_N_CODES ? code_names[code] : "UNKNOWN";
}

const char *metrics_rejection_name(metrics_rejection why)
{
    return rejection_names[why];
}
