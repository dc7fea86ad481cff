/*
 * exposition.c — the daemon's metrics as a Prometheus text exposition
 * (format 0.0.4) or OpenMetrics 1.0 text: the counters of metrics.c plus
 * what is read at scrape time (queue depth, prefix cache, engine memory,
 * build and model information) and the standard process_ families.
 * Names follow the Prometheus conventions: lmscore_ prefix (process_ for
 * the families every client library exports), counters end in _total,
 * times in _seconds, sizes in _bytes. docs/operations.md lists every
 * family.
 */
#include "exposition.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"
#include "process_stats.h"

typedef struct {
    char *data;
    size_t len, cap;
    bool failed; /* out of memory: the result is dropped */
    bool openmetrics;
} text;

static void put(text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(text *t, const char *fmt, ...)
{
    if (t->failed) return;
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->data + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n < 0) {
            t->failed = true;
            return;
        }
        if ((size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        size_t cap = t->cap * 2 > t->len + (size_t)n + 1 ? t->cap * 2 : t->len + (size_t)n + 1;
        char *grown = realloc(t->data, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->data = grown;
        t->cap = cap;
    }
}

/* A label value with \, " and newline escaped, as both formats want. */
static void put_escaped(text *t, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            put(t, "\\\\");
        else if (*s == '"')
            put(t, "\\\"");
        else if (*s == '\n')
            put(t, "\\n");
        else
            put(t, "%c", *s);
    }
}

/* The HELP and TYPE lines. OpenMetrics names a counter's family without
 * its _total suffix; the 0.0.4 format names it with. */
static void family(text *t, const char *name, const char *type, const char *help)
{
    size_t len = strlen(name);
    if (t->openmetrics && strcmp(type, "counter") == 0 && len > 6 &&
        strcmp(name + len - 6, "_total") == 0)
        len -= 6;
    put(t, "# HELP %.*s %s\n# TYPE %.*s %s\n", (int)len, name, help, (int)len, name, type);
}

/* A family of one unlabelled sample. */
static void scalar_i(text *t, const char *name, const char *type, const char *help, long long v)
{
    family(t, name, type, help);
    put(t, "%s %lld\n", name, v);
}

/* 15 significant digits: a start time since the epoch keeps its 10 ms. */
static void scalar_f(text *t, const char *name, const char *type, const char *help, double v)
{
    family(t, name, type, help);
    put(t, "%s %.15g\n", name, v);
}

/* "/pkg.Service/Method" -> service="pkg.Service",method="Method"; an
 * unknown method (NULL) -> service="",method="unknown". */
static void put_method_labels(text *t, const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL;
    if (!path || !slash || slash == path) {
        put(t, "service=\"\",method=\"unknown\"");
        return;
    }
    put(t, "service=\"%.*s\",method=\"%s\"", (int)(slash - path - 1), path + 1, slash + 1);
}

static const char *method_path(const metrics_detail *d, int m)
{
    return m < d->n_methods ? d->method_paths[m] : NULL;
}

static void requests(text *t, const metrics_detail *d)
{
    family(t, "lmscore_requests_total", "counter",
           "Calls finished (gRPC methods and HTTP endpoints), by method and status code");
    for (int m = 0; m <= d->n_methods; m++)
        for (int c = 0; c < METRICS_N_CODES; c++) {
            /* OK always, for every method served, so that ratios have a
             * denominator before the first error */
            bool always = c == 0 && m < d->n_methods;
            if (!d->finished[m][c] && !always) continue;
            put(t, "lmscore_requests_total{");
            put_method_labels(t, method_path(d, m));
            put(t, ",code=\"%s\"} %lld\n", metrics_code_name((grpc_status_code)c),
                (long long)d->finished[m][c]);
        }
}

static void errors(text *t, const metrics_detail *d)
{
    family(t, "lmscore_errors_total", "counter",
           "Calls (gRPC methods and HTTP endpoints) that ended with an error, by status "
           "code and google.rpc.ErrorInfo reason (\"\" when the status carries none)");
    for (int r = 0; r <= d->n_reasons; r++)
        for (int c = 1; c < METRICS_N_CODES; c++) {
            int64_t v = r < d->n_reasons ? d->errors_by_reason[r][c] : d->errors_other_reason[c];
            if (!v) continue;
            put(t, "lmscore_errors_total{code=\"%s\",reason=\"",
                metrics_code_name((grpc_status_code)c));
            put_escaped(t, r < d->n_reasons ? d->reasons[r] : "other");
            put(t, "\"} %lld\n", (long long)v);
        }
    family(t, "lmscore_rejections_total", "counter",
           "Calls refused before any work: the queue was full (RESOURCE_EXHAUSTED), the "
           "server was draining or still loading (UNAVAILABLE)");
    for (int r = 0; r < METRICS_N_REJECTIONS; r++)
        put(t, "lmscore_rejections_total{reason=\"%s\"} %lld\n",
            metrics_rejection_name((metrics_rejection)r), (long long)d->rejections[r]);
}

static void histograms(text *t, const metrics_detail *d)
{
    static const struct {
        const char *name, *help;
    } kinds[METRICS_N_TIMES] = {
        [METRICS_CALL_TIME] = {"lmscore_request_duration_seconds",
                               "Whole calls, from accepted to finished, per method"},
        [METRICS_QUEUE_TIME] = {"lmscore_queue_wait_seconds",
                                "Time jobs waited in the queue for a worker, per method "
                                "(a ScoreItems stream queues one job per message)"},
        [METRICS_ENGINE_TIME] = {"lmscore_engine_duration_seconds",
                                 "Time engine scoring calls took, per method (a ScoreItems "
                                 "stream makes one per item batch)"},
    };
    for (int k = 0; k < METRICS_N_TIMES; k++) {
        family(t, kinds[k].name, "histogram", kinds[k].help);
        for (int m = 0; m <= d->n_methods; m++) {
            const metrics_histogram *h = &d->times[m][k];
            if (!h->count) continue;
            int64_t cumulative = 0;
            for (int b = 0; b <= METRICS_N_BUCKETS; b++) {
                cumulative += h->buckets[b];
                put(t, "%s_bucket{", kinds[k].name);
                put_method_labels(t, method_path(d, m));
                if (b < METRICS_N_BUCKETS)
                    put(t, ",le=\"%g\"} %lld\n", metrics_bucket_seconds[b], (long long)cumulative);
                else
                    put(t, ",le=\"+Inf\"} %lld\n", (long long)cumulative);
            }
            put(t, "%s_sum{", kinds[k].name);
            put_method_labels(t, method_path(d, m));
            put(t, "} %.9g\n%s_count{", (double)h->sum_ns * 1e-9, kinds[k].name);
            put_method_labels(t, method_path(d, m));
            put(t, "} %lld\n", (long long)h->count);
        }
    }
}

static void work(text *t, const metrics_detail *d, const metrics_snapshot *s)
{
    scalar_i(t, "lmscore_requests_started_total", "counter",
             "Calls accepted, gRPC and HTTP (GetModelInfo's stats.requests_total)",
             s->requests_total);
    scalar_i(t, "lmscore_items_scored_total", "counter",
             "Items scored: a scoring call of N items adds N once it has scored them all, "
             "whatever its algorithm or stream shape (GetModelInfo's stats.items_total)",
             s->items_total);
    scalar_i(t, "lmscore_prompt_tokens_total", "counter",
             "Sequence tokens of the items scored (Usage.prompt_tokens summed)", d->prompt_tokens);
    scalar_i(t, "lmscore_computed_tokens_total", "counter",
             "Token rows run through the model (Usage.computed_tokens summed)", d->computed_tokens);
    scalar_i(t, "lmscore_cached_tokens_total", "counter",
             "Query rows served from the prefix cache (Usage.cached_tokens summed)",
             d->cached_tokens);
    scalar_i(t, "lmscore_truncated_items_total", "counter",
             "Items (rerank documents, Score items that asked) cut to their token budget "
             "instead of refused",
             d->truncated_items);
    scalar_i(t, "lmscore_truncated_tokens_total", "counter",
             "Tokens those cuts dropped from the items", d->truncated_tokens);
    family(t, "lmscore_engine_calls_total", "counter",
           "Engine scoring calls by the algorithm that ran (one per Score or ScoreStream "
           "call, one per ScoreItems item batch)");
    for (int a = LMS_ALGO_SERIAL; a < METRICS_N_ALGORITHMS; a++)
        put(t, "lmscore_engine_calls_total{algorithm=\"%s\"} %lld\n",
            lms_algorithm_name((lms_algorithm)a), (long long)d->engine_calls_by_algorithm[a]);
    scalar_i(t, "lmscore_in_flight_calls", "gauge", "Scoring calls in progress",
             s->in_flight_calls);
    scalar_i(t, "lmscore_in_flight_jobs", "gauge", "Worker jobs queued or running",
             s->in_flight_jobs);
}

static void server_state(text *t, service *svc, const metrics_detail *d, const metrics_snapshot *s)
{
    scalar_i(t, "lmscore_serving", "gauge",
             "1 while the daemon takes calls (health SERVING); 0 while it loads the model and "
             "once it drains",
             (service_phase)atomic_load(&svc->phase) == PHASE_SERVING);
    scalar_i(t, "lmscore_queue_depth", "gauge", "Jobs waiting for a worker",
             svc->workers ? worker_pool_queued(svc->workers) : 0);
    scalar_i(t, "lmscore_queue_capacity", "gauge",
             "Jobs that may wait (--queue-depth); beyond it calls are rejected (queue_full)",
             svc->cfg->queue_depth);
    scalar_i(t, "lmscore_workers", "gauge", "Engine workers (--workers)", svc->cfg->workers);

    /* svc->engine is published before the phase leaves LOADING, and closed
     * only after the metrics server has stopped. */
    lms_engine *engine =
        (service_phase)atomic_load(&svc->phase) != PHASE_LOADING ? svc->engine : NULL;
    lms_cache_stats cache = {0};
    if (engine) lms_engine_cache_stats(engine, &cache);
    scalar_i(t, "lmscore_prefix_cache_hits_total", "counter",
             "Query prefills served from the prefix cache", cache.hits);
    scalar_i(t, "lmscore_prefix_cache_misses_total", "counter",
             "Query prefills computed (not in the prefix cache)", cache.misses);
    scalar_i(t, "lmscore_prefix_cache_evictions_total", "counter",
             "Prefix cache entries evicted to make room", cache.evictions);
    scalar_i(t, "lmscore_prefix_cache_bytes", "gauge", "Bytes of query KV the prefix cache holds",
             (long long)cache.bytes);
    scalar_i(t, "lmscore_prefix_cache_capacity_bytes", "gauge",
             "The prefix cache's budget (--prefix-cache-bytes)",
             (long long)svc->cfg->prefix_cache_bytes);
    scalar_i(t, "lmscore_engine_memory_bytes", "gauge",
             "Bytes held by the engine's accounted heap: scratch, KV, converted weights "
             "(GetModelInfo's stats.engine_bytes)",
             (long long)lms_alloc_current_bytes());

    scalar_f(t, "lmscore_model_load_seconds", "gauge",
             "How long loading and warming up the model took (0 while it loads)",
             d->model_load_seconds);
    scalar_f(t, "lmscore_uptime_seconds", "gauge", "Seconds since the daemon started",
             s->uptime_seconds);

    family(t, "lmscore_build_info", "gauge",
           "1, labelled with the version, the model served (empty while it loads), its "
           "precision, the compute tier (isa; isa_dropped: a faster tier passed over, why) and "
           "the algorithms it offers");
    put(t, "lmscore_build_info{version=\"%s\",model=\"", LMSCORED_VERSION);
    if (engine) {
        lms_model_info mi;
        lms_engine_model_info(engine, &mi);
        put_escaped(t, mi.name);
        /* the precision and tier GetModelInfo reports: both read lms_model_info */
        put(t, "\",architecture=\"%s\",precision=\"%s\"", mi.architecture, mi.precision);
        put(t, ",isa=\"%s\",isa_dropped=\"", mi.isa);
        put_escaped(t, mi.isa_dropped);
        put(t, "\"");
        put(t, ",default_algorithm=\"%s\"",
            lms_algorithm_name(lms_engine_options_get(engine)->algorithm));
    } else {
        put(t,
            "\",architecture=\"\",precision=\"\",isa=\"\",isa_dropped=\"\",default_algorithm=\"\"");
    }
    put(t, ",algorithms=\"");
    for (int a = LMS_ALGO_SERIAL; a < METRICS_N_ALGORITHMS; a++)
        put(t, "%s%s", a > LMS_ALGO_SERIAL ? "," : "", lms_algorithm_name((lms_algorithm)a));
    put(t, "\"} 1\n");
}

/* The process_ families as the Prometheus client libraries name and type
 * them, and the cgroup memory limit the resident size runs into. A figure
 * the kernel does not give is left out rather than exported wrong. */
static void process(text *t)
{
    process_stats p;
    if (!process_stats_read(&p)) return;
    scalar_f(t, "process_cpu_seconds_total", "counter",
             "Total user and system CPU time spent in seconds.", p.cpu_seconds);
    scalar_f(t, "process_start_time_seconds", "gauge",
             "Start time of the process since unix epoch in seconds.", p.start_time_seconds);
    if (p.open_fds >= 0)
        scalar_i(t, "process_open_fds", "gauge", "Number of open file descriptors.", p.open_fds);
    if (p.max_fds >= 0)
        scalar_i(t, "process_max_fds", "gauge", "Maximum number of open file descriptors.",
                 p.max_fds);
    scalar_i(t, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.",
             p.virtual_memory_bytes);
    scalar_i(t, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.",
             p.resident_memory_bytes);
    family(t, "lmscore_memory_limit_bytes", "gauge",
           "The memory limit of the daemon's cgroups, the tightest of its own and its "
           "ancestors' (a container's memory limit, a unit's MemoryMax=); no sample without one");
    if (p.memory_limit_bytes >= 0)
        put(t, "lmscore_memory_limit_bytes %lld\n", (long long)p.memory_limit_bytes);
}

char *exposition_render(service *svc, bool openmetrics, size_t *len)
{
    metrics_detail *d = malloc(sizeof *d);
    text t = {.cap = 16384, .openmetrics = openmetrics};
    t.data = malloc(t.cap);
    if (!d || !t.data) {
        free(d);
        free(t.data);
        return NULL;
    }
    metrics_snapshot s;
    metrics_snapshot_get(&s);
    metrics_detail_get(d);
    requests(&t, d);
    errors(&t, d);
    work(&t, d, &s);
    histograms(&t, d);
    server_state(&t, svc, d, &s);
    process(&t);
    if (openmetrics) put(&t, "# EOF\n");
    free(d);
    if (t.failed) {
        free(t.data);
        return NULL;
    }
    *len = t.len;
    return t.data;
}
