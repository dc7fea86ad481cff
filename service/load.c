/*
 * load.c — lmscored's model load (see daemon.h): the engine's options and
 * thread budget, the load and its warm-up on a thread of their own, and
 * the main thread taking signals meanwhile (a stop signal stops the load
 * at its next poll; a load that does not stop in time is left behind).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "daemon.h"

/* Set by the main thread when a stop signal comes; the model load, on its
 * own thread, polls it. */
static atomic_bool g_stop_requested;

static int stop_requested(void *ctx)
{
    (void)ctx;
    return atomic_load(&g_stop_requested);
}

/* The engine threads in all: --threads, else OMP_NUM_THREADS (its first
 * number: the variable may list one per nesting level), else the CPUs this
 * process may use. *source says which. */
static int thread_budget(const lmscored_config *cfg, const char **source)
{
    if (cfg->threads > 0) {
        *source = "--threads";
        return cfg->threads;
    }
    const char *omp = getenv("OMP_NUM_THREADS");
    long n = omp ? strtol(omp, NULL, 10) : 0;
    if (n > 0 && n <= 4096) {
        *source = "OMP_NUM_THREADS";
        return (int)n;
    }
    *source = "cpus";
    return cpus_available();
}

/* Each worker's share of the thread budget, logged. */
int daemon_worker_threads(const lmscored_config *cfg)
{
    const char *source;
    int budget = thread_budget(cfg, &source);
    int per_worker = budget / cfg->workers > 0 ? budget / cfg->workers : 1;
    log_record r;
    log_begin(&r, budget < cfg->workers ? LOG_WARNING : LOG_INFO,
              budget < cfg->workers ? "more workers than threads: the workers share CPUs"
                                    : "engine threads");
    log_int(&r, "workers", cfg->workers);
    log_int(&r, "threads_per_worker", per_worker);
    log_int(&r, "budget", budget);
    log_str(&r, "from", source);
    log_end(&r);
    return per_worker;
}

/* How far the model load got: the step the engine is in and its pieces
 * done, told from the engine's threads; the load's progress lines read it. */
static struct {
    const char *_Atomic step;
    atomic_size_t done, total;
} g_load_progress;

static void load_progress(void *ctx, const char *what, size_t done, size_t total)
{
    (void)ctx;
    atomic_store(&g_load_progress.total, total);
    atomic_store(&g_load_progress.done, done);
    atomic_store(&g_load_progress.step, what);
}

static void engine_options(const lmscored_config *cfg, lms_engine_options *eo)
{
    lms_engine_options_default(eo);
    eo->open_stop = (lms_stop){.should_stop = stop_requested, .on_progress = load_progress};
    eo->algorithm = cfg->algorithm;
    eo->precision = cfg->precision;
    eo->kv_dtype = cfg->kv_dtype;
    eo->isa = cfg->isa;
    eo->test_drop_amx = test_hook_ms("LMSCORE_TEST_DROP_AMX") != 0;
    eo->test_self_check_signal = (int)test_hook_ms("LMSCORE_TEST_SELF_CHECK_SIGNAL");
    eo->max_packed_tokens = cfg->max_packed_tokens;
    eo->prefix_cache_bytes = cfg->prefix_cache_bytes;
    eo->delimiter = cfg->delimiter;
    eo->max_items = cfg->max_items;
    if (cfg->max_sequence_tokens > 0) eo->max_sequence_tokens = cfg->max_sequence_tokens;
}

/* One small score so the first real call does not pay for first-touch page
 * faults and lazily built engine state. */
static lms_status warm_up(lms_engine *engine, lms_error *err)
{
    int32_t token = lms_engine_options_get(engine)->delimiter == 0 ? 1 : 0;
    int32_t query[2] = {token, token};
    lms_tokens item = {.ids = query, .len = 1};
    lms_score_request req = {.query = {.ids = query, .len = 2},
                             .items = &item,
                             .n_items = 1,
                             .label_ids = &token,
                             .n_labels = 1};
    lms_score_hooks hooks = {.should_stop = stop_requested};
    lms_score_result res;
    memset(&res, 0, sizeof res);
    lms_status st = lms_engine_score(engine, &req, &hooks, &res, err);
    lms_score_result_free(&res);
    return st;
}

static lms_status load_model(const lmscored_config *cfg, lms_engine **out, lms_error *err)
{
    daemon_sleep_ms(test_hook_ms("LMSCORE_TEST_LOAD_STUCK_MS"));
    for (int64_t delay = test_hook_ms("LMSCORE_TEST_LOAD_DELAY_MS"); delay > 0; delay -= 10) {
        if (stop_requested(NULL))
            return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "stopped during the load delay");
        daemon_sleep_ms(delay < 10 ? delay : 10);
    }
    lms_engine_options eo;
    engine_options(cfg, &eo);
    int64_t t0 = monotonic_ms();
    lms_status st = lms_engine_open(cfg->model_path, &eo, out, err);
    if (st != LMS_OK) return st;
    st = warm_up(*out, err);
    if (st != LMS_OK) {
        lms_engine_close(*out);
        *out = NULL;
        return lms_fail_context(err, "warm-up");
    }
    metrics_model_loaded((double)(monotonic_ms() - t0) / 1000.0);
    lms_model_info mi;
    lms_engine_model_info(*out, &mi);
    log_record r;
    log_begin(&r, LOG_INFO, "model loaded and warmed up");
    log_str(&r, "model", mi.name);
    log_str(&r, "arch", mi.architecture);
    log_int(&r, "vocab", mi.vocab_size);
    log_str(&r, "precision", mi.precision);
    log_str(&r, "precision_reason", mi.precision_reason);
    log_str(&r, "isa", mi.isa);
    log_str(&r, "kernels", mi.kernels);
    log_str(&r, "kv_cache_dtype", mi.kv_dtype);
    log_str(&r, "weights", mi.weights);
    log_int(&r, "weight_bytes", mi.weight_bytes);
    log_int(&r, "ms", monotonic_ms() - t0);
    log_end(&r);
    if (mi.isa_dropped[0]) {
        log_begin(&r, LOG_WARNING, "compute tier dropped");
        log_str(&r, "isa", mi.isa);
        log_str(&r, "dropped", mi.isa_dropped);
        log_end(&r);
    }
    return LMS_OK;
}

/* A model load on its own thread. Heap-allocated: a load that does not
 * stop is left behind with it when the process exits. */
typedef struct {
    const lmscored_config *cfg;
    lms_engine *engine;
    lms_error err;
    lms_status status;
    atomic_bool done;
} model_load;

static void *model_load_main(void *arg)
{
    model_load *l = arg;
    l->status = load_model(l->cfg, &l->engine, &l->err);
    atomic_store(&l->done, true);
    return NULL;
}

/* How often a model load still running says so (the test-hooks binary
 * takes LMSCORE_TEST_LOAD_PROGRESS_MS instead). */
#define LOAD_PROGRESS_MS 5000

static void log_load_progress(int64_t ms)
{
    log_record r;
    log_begin(&r, LOG_INFO, "still loading the model");
    log_int(&r, "ms", ms);
    const char *step = atomic_load(&g_load_progress.step);
    size_t total = atomic_load(&g_load_progress.total);
    if (step && total) {
        log_str(&r, "step", step);
        log_int(&r, "percent", (int64_t)(atomic_load(&g_load_progress.done) * 100 / total));
    }
    log_end(&r);
}

/* Loads the model while the main thread takes signals. A stop signal makes
 * the load stop at its next poll (LMS_ERR_CANCELLED); a load still running
 * --drain-timeout + STOP_GRACE_MS after it is left behind. */
lms_status daemon_load_taking_signals(const service *svc, lms_engine **engine, lms_error *err)
{
    model_load *l = calloc(1, sizeof *l);
    pthread_t thread;
    if (!l) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    l->cfg = svc->cfg;
    atomic_init(&l->done, false);
    if (pthread_create(&thread, NULL, model_load_main, l) != 0) {
        free(l);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "cannot start the model load's thread");
    }
    int64_t stop_by = INT64_MAX;
    int64_t every = test_hook_ms("LMSCORE_TEST_LOAD_PROGRESS_MS");
    if (every <= 0) every = LOAD_PROGRESS_MS;
    int64_t started = monotonic_ms(), next_progress = started + every;
    while (!atomic_load(&l->done)) {
        int64_t now = monotonic_ms();
        if (now >= stop_by) daemon_exit_leaving("the model load");
        if (now >= next_progress) {
            log_load_progress(now - started);
            next_progress = now + every;
        }
        int sig = signals_wait(10);
        if (!sig) continue;
        if (signals_action(sig) != SIGNAL_STOP) {
            daemon_on_signal(sig, svc);
        } else if (!atomic_exchange(&g_stop_requested, true)) {
            char buf[32];
            log_record r;
            log_begin(&r, LOG_INFO, "signal received while loading the model: stopping");
            log_str(&r, "signal", signals_name(sig, buf, sizeof buf));
            log_end(&r);
            stop_by = monotonic_ms() + svc->cfg->drain_timeout_ms + STOP_GRACE_MS;
        }
    }
    pthread_join(thread, NULL);
    lms_status st = l->status;
    *engine = l->engine;
    *err = l->err;
    free(l);
    return st;
}
