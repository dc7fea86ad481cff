/*
 * run.c — building and timing one scoring request (see run.h).
 */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "clock.h"
#include "proc_mem.h"

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static void fill_ids(int32_t *ids, int64_t n, int32_t vocab, uint64_t *state)
{
    for (int64_t i = 0; i < n; i++)
        ids[i] = (int32_t)(splitmix64(state) % (uint64_t)vocab);
}

int request_data_init(request_data *d, const workload *w, int32_t vocab, uint64_t seed)
{
    const size_t item_tokens = (size_t)w->n * w->l;
    d->query = malloc(((size_t)w->q + 1) * sizeof(int32_t));
    d->item_ids = malloc((item_tokens + 1) * sizeof(int32_t));
    d->items = malloc(((size_t)w->n + 1) * sizeof(lms_tokens));
    if (!d->query || !d->item_ids || !d->items) {
        request_data_free(d);
        return -1;
    }
    uint64_t state = seed;
    fill_ids(d->query, w->q, vocab, &state);
    fill_ids(d->item_ids, (int64_t)item_tokens, vocab, &state);
    fill_ids(d->labels, 2, vocab, &state);
    for (int32_t i = 0; i < w->n; i++)
        d->items[i] = (lms_tokens){d->item_ids + (size_t)i * w->l, w->l};
    d->req = (lms_score_request){
        .query = {d->query, w->q},
        .items = d->items,
        .n_items = w->n,
        .label_ids = d->labels,
        .n_labels = 2,
    };
    return 0;
}

void request_data_new_query(request_data *d, int32_t vocab, uint64_t seed)
{
    uint64_t state = seed;
    fill_ids(d->query, d->req.query.len, vocab, &state);
}

void request_data_free(request_data *d)
{
    free(d->query);
    free(d->item_ids);
    free(d->items);
    d->query = d->item_ids = NULL;
    d->items = NULL;
}

const char *run_status_name(run_status s)
{
    static const char *const NAMES[] = {[RUN_OK] = "ok",
                                        [RUN_REFUSED] = "refused",
                                        [RUN_STOPPED] = "stopped",
                                        [RUN_FAILED] = "failed"};
    return (unsigned)s < sizeof NAMES / sizeof *NAMES ? NAMES[s] : "unknown";
}

double run_cpu_share(const run_result *x)
{
    return x->cpu_seconds / (x->seconds * (double)sysconf(_SC_NPROCESSORS_ONLN));
}

typedef struct {
    double deadline;
    int32_t items_done;
} run_progress;

static int past_deadline(void *ctx)
{
    return monotonic_seconds() > ((const run_progress *)ctx)->deadline;
}

static int count_items(void *ctx, int32_t first, int32_t n, const float *scores,
                       const float *logprobs)
{
    (void)scores;
    (void)logprobs;
    ((run_progress *)ctx)->items_done = first + n;
    return 0;
}

void run_request(lms_engine *e, request_data *d, lms_algorithm algo, int32_t n_items,
                 double max_seconds, run_result *out)
{
    lms_score_request req = d->req;
    req.n_items = n_items;
    req.algorithm = algo;
    lms_score_result res;
    lms_error err = {0};
    run_progress progress = {0};
    const lms_score_hooks hooks = {
        .on_items = count_items, .should_stop = past_deadline, .ctx = &progress};

    *out = (run_result){.items = n_items, .ran_as = algo};
    lms_alloc_reset_peak();
    const size_t held = lms_alloc_current_bytes();
    const int rss_reset = proc_reset_peak_rss();
    const double cpu0 = process_cpu_seconds(), t0 = monotonic_seconds();
    progress.deadline = t0 + max_seconds;
    lms_status st = lms_engine_score(e, &req, &hooks, &res, &err);
    out->seconds = monotonic_seconds() - t0;
    out->cpu_seconds = process_cpu_seconds() - cpu0;
    out->items_done = progress.items_done;
    out->engine_peak_bytes = (int64_t)(lms_alloc_peak_bytes() - held);
    out->peak_rss_bytes = rss_reset ? proc_peak_rss_bytes() : -1;
    if (st == LMS_OK) {
        out->status = RUN_OK;
        out->ran_as = res.algorithm;
        out->computed_tokens = res.computed_tokens;
        out->cached_tokens = res.cached_tokens;
        snprintf(out->reason, sizeof out->reason, "%s", res.algorithm_reason);
        lms_score_result_free(&res);
        return;
    }
    out->status = st == LMS_ERR_RESOURCE_EXHAUSTED ? RUN_REFUSED
                  : st == LMS_ERR_CANCELLED        ? RUN_STOPPED
                                                   : RUN_FAILED;
    snprintf(out->reason, sizeof out->reason, "%s%s%s", err.reason[0] ? err.reason : "",
             err.reason[0] ? ": " : "", err.msg);
}
