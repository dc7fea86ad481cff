/*
 * run.h — one timed scoring request: random token ids for a workload shape,
 * the engine call under a deadline, and what it cost (wall time, the
 * engine's own peak bytes, the process's peak RSS).
 */
#ifndef BENCH_RUN_H
#define BENCH_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"

/* A request shape: a query of q tokens and n items of l tokens each. */
typedef struct {
    char name[4]; /* "a", "b", ... */
    int32_t q, n, l;
    int32_t serial_items; /* serial is timed on this many items, then extrapolated */
    bool warm;            /* also time prefill_extend with the query's KV cached */
    int rounds;           /* times each algorithm runs (a fresh query each); best kept */
} workload;

/* Token ids for one request, drawn from a seeded generator over the
 * vocabulary; two labels. Owns its buffers. */
typedef struct {
    int32_t *query;
    int32_t *item_ids; /* n × l */
    lms_tokens *items;
    int32_t labels[2];
    lms_score_request req;
} request_data;

int request_data_init(request_data *d, const workload *w, int32_t vocab, uint64_t seed);
/* A fresh query of the same length, so that no prefix cache can serve it. */
void request_data_new_query(request_data *d, int32_t vocab, uint64_t seed);
void request_data_free(request_data *d);

typedef enum { RUN_OK, RUN_REFUSED, RUN_STOPPED, RUN_FAILED } run_status;

const char *run_status_name(run_status s);

typedef struct {
    run_status status;
    lms_algorithm ran_as;
    char reason[512];   /* the engine's algorithm_reason, or its error message */
    int32_t items;      /* items in the timed request */
    int32_t items_done; /* items final when the run ended (all of them unless stopped) */
    double seconds;
    double cpu_seconds; /* user + system time of all the process's threads */
    int64_t computed_tokens, cached_tokens;
    int64_t engine_peak_bytes; /* lms_alloc peak above what the engine held before */
    int64_t peak_rss_bytes;    /* -1 when unknown */
} run_result;

/* The share of the machine's CPUs the process used during the run: well
 * under 1 means other processes took cores from it. */
double run_cpu_share(const run_result *x);

/* Scores the first n_items items of d with algo; stops the engine after
 * max_seconds (status RUN_STOPPED). A resource refusal (e.g. packed_dense
 * above its mask limit) is RUN_REFUSED, any other error RUN_FAILED. */
void run_request(lms_engine *e, request_data *d, lms_algorithm algo, int32_t n_items,
                 double max_seconds, run_result *out);

#endif
