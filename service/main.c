/*
 * main.c — lmscored: configuration, startup order, signals and the drain.
 * run() is the start-up and shut-down as named steps, in order:
 * init_daemon, init_handlers, start_listeners, load_engine, serve (which
 * drains), stop_serving, free_daemon.
 *
 * Startup: the server listens first and answers health NOT_SERVING while
 * the model loads (on its own thread); after the model is loaded and one
 * warm-up score ran, the phase becomes SERVING, health flips and systemd
 * hears READY=1. The main thread takes every signal (signals.h) all along,
 * ticking the systemd watchdog and status while serving. Drain (on a stop
 * signal): health NOT_SERVING, STOPPING=1, new scoring calls refused
 * (UNAVAILABLE), in-flight ones finish up to --drain-timeout, then the
 * server shuts down and the rest is cancelled. A stop signal that arrives
 * while the model loads stops the load at its next poll (the weights'
 * conversion and the warm-up poll it) and the daemon exits as after a
 * drain. Whatever runs, the process is gone STOP_GRACE_MS after
 * --drain-timeout: a load or a worker that does not stop by then (a file
 * that blocks its reader, work that never polls) is left behind, exit 1.
 */
#include <grpc/grpc.h>
#include <malloc.h>
#if defined(__SANITIZE_ADDRESS__)
#define LMSCORED_ASAN_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LMSCORED_ASAN_ALLOCATOR 1
#endif
#endif
#ifdef LMSCORED_ASAN_ALLOCATOR
/* The sanitizer runtime's own interface (gcc's libasan exports it without
 * shipping clang's sanitizer/allocator_interface.h). */
void __sanitizer_purge_allocator(void);
#endif
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "base.h"
#include "clock.h"
#include "core.h"
#include "ops.h"
#include "transport.h"

static void sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

static void log_error(const char *what, const lms_error *err)
{
    log_record r;
    log_begin(&r, LOG_ERR, what);
    log_str(&r, "error", err->msg);
    log_str(&r, "status", lms_status_name(err->status));
    if (err->field[0]) log_str(&r, "field", err->field);
    log_end(&r);
}

/* How long after --drain-timeout the process is gone at the latest: the
 * server's own shutdown (a second for the calls' last sends) and the
 * workers noticing their calls ended. */
#define STOP_GRACE_MS 2000

/* Set by the main thread when a stop signal comes; the model load, on its
 * own thread, polls it. */
static atomic_bool g_stop_requested;

static int stop_requested(void *ctx)
{
    (void)ctx;
    return atomic_load(&g_stop_requested);
}

static const char *phase_name(service_phase phase)
{
    switch (phase) {
    case PHASE_LOADING:
        return "loading";
    case PHASE_SERVING:
        return "serving";
    case PHASE_DRAINING:
        break;
    }
    return "draining";
}

/* One record of what the daemon is doing (SIGUSR1). */
static void log_state(const service *svc)
{
    metrics_snapshot snap;
    metrics_snapshot_get(&snap);
    log_record r;
    log_begin(&r, LOG_INFO, "state");
    log_str(&r, "phase", phase_name((service_phase)atomic_load(&svc->phase)));
    log_int(&r, "admitted_calls", call_layer_admitted());
    log_int(&r, "scoring_calls", snap.in_flight_calls);
    log_int(&r, "jobs", snap.in_flight_jobs);
    log_int(&r, "queued_jobs", worker_pool_queued(svc->workers));
    log_int(&r, "workers", svc->cfg->workers);
    log_int(&r, "longest_stall_ms", worker_pool_stalled_ms(svc->workers));
    log_int(&r, "requests", snap.requests_total);
    log_int(&r, "items", snap.items_total);
    log_int(&r, "engine_bytes", (int64_t)lms_alloc_current_bytes());
    log_int(&r, "uptime_s", (int64_t)snap.uptime_seconds);
    log_end(&r);
}

/* Acts on a signal taken by the main thread that is not a stop signal. */
static void on_signal(int sig, const service *svc)
{
    if (signals_action(sig) == SIGNAL_LOG_STATE) {
        log_state(svc);
        return;
    }
    char buf[32];
    log_record r;
    log_begin(&r, LOG_NOTICE, "signal ignored");
    log_str(&r, "signal", signals_name(sig, buf, sizeof buf));
    if (sig == SIGHUP) log_str(&r, "why", "the configuration is read only at start: restart");
    log_end(&r);
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
static int worker_threads(const lmscored_config *cfg)
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
    sleep_ms(test_hook_ms("LMSCORE_TEST_LOAD_STUCK_MS"));
    for (int64_t delay = test_hook_ms("LMSCORE_TEST_LOAD_DELAY_MS"); delay > 0; delay -= 10) {
        if (stop_requested(NULL))
            return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "stopped during the load delay");
        sleep_ms(delay < 10 ? delay : 10);
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

/* Exits at once, leaving behind work that did not stop by its deadline. */
static _Noreturn void exit_leaving(const char *what)
{
    log_record r;
    log_begin(&r, LOG_ERR, "did not stop in time: exiting without it");
    log_str(&r, "what", what);
    log_end(&r);
    _exit(1);
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
static lms_status load_taking_signals(const service *svc, lms_engine **engine, lms_error *err)
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
        if (now >= stop_by) exit_leaving("the model load");
        if (now >= next_progress) {
            log_load_progress(now - started);
            next_progress = now + every;
        }
        int sig = signals_wait(10);
        if (!sig) continue;
        if (signals_action(sig) != SIGNAL_STOP) {
            on_signal(sig, svc);
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

/* Hands the free pages of the heap back to the system. A sanitizer build's
 * allocator replaces glibc's, so there it is asked instead. */
static void release_free_memory(void)
{
#ifdef LMSCORED_ASAN_ALLOCATOR
    __sanitizer_purge_allocator();
#else
    malloc_trim(0);
#endif
}

/* Trims on this many quiet ticks after traffic: memory freed late (a
 * connection torn down after its last call) goes back too. */
#define TRIM_QUIET_TICKS 5

typedef struct {
    int64_t requests_seen;
    int trims_left;
} trim_state;

/* glibc keeps the pages of freed blocks for reuse: after a burst (large
 * messages, many connections) the RSS would stay at its peak for good. On
 * the first ticks without a new call and with no admitted call running,
 * the free pages go back to the system; under steady traffic nothing is
 * trimmed (the memory is about to be used again). */
static void trim_after_burst(trim_state *t)
{
    metrics_snapshot snap;
    metrics_snapshot_get(&snap);
    if (snap.requests_total != t->requests_seen) {
        t->requests_seen = snap.requests_total;
        t->trims_left = TRIM_QUIET_TICKS;
    } else if (t->trims_left > 0 && call_layer_admitted() == 0) {
        t->trims_left--;
        release_free_memory();
    }
}

/* Serves until a stop signal, which it returns, acting on the others and
 * ticking systemd meanwhile. */
static int serve_until_signal(const service *svc, systemd_notifier *sd)
{
    trim_state trim = {.trims_left = TRIM_QUIET_TICKS};
    for (;;) {
        int sig = signals_wait(systemd_tick_ms(sd));
        if (sig && signals_action(sig) == SIGNAL_STOP) return sig;
        if (sig) on_signal(sig, svc);
        systemd_tick(sd, svc->workers);
        trim_after_burst(&trim);
    }
}

/* Ends the calls still running when the server stops: UNAVAILABLE, so a
 * client retries them elsewhere. */
static void stop_server(server *srv, http_api *http)
{
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_UNAVAILABLE, "draining", NULL,
                   "the server is shutting down; retry on another replica");
    /* The HTTP server's threads wait for their calls' ends: the calls end
     * first. */
    call_layer_end_all(&st);
    http_api_stop(http);
    /* The calls were ended above: the grace covers their last sends and
     * workers noticing at their next poll. */
    server_shutdown(srv, &st, 1000);
}

/* The server's shutdown has gRPC core cancel, without details, every call
 * that reaches it once it has begun. So after the drain, new calls are
 * still answered draining until no call has come or ended for
 * DRAIN_QUIET_MS (at most until until_ms): clients told to go elsewhere
 * have stopped sending, and a client whose call was just answered has had
 * the time to send its next one (and be told draining). */
#define DRAIN_QUIET_MS 250

static void wait_for_quiet(int64_t until_ms)
{
    for (;;) {
        int64_t last = metrics_last_request_ns();
        if (call_layer_last_end_ns() > last) last = call_layer_last_end_ns();
        int64_t quiet_ms = (monotonic_ns() - last) / 1000000;
        if (quiet_ms >= DRAIN_QUIET_MS || monotonic_ms() >= until_ms) return;
        sleep_ms(DRAIN_QUIET_MS - quiet_ms < 10 ? DRAIN_QUIET_MS - quiet_ms : 10);
    }
}

/* The log line comes after the phase changes: once it is written, every new
 * call is refused (tests and operators wait for it). Returns the drain's
 * deadline. */
static int64_t drain(service *svc, int sig, health *h, server *srv, http_api *http,
                     systemd_notifier *sd)
{
    call_layer_log_every_call();
    atomic_store(&svc->phase, PHASE_DRAINING);
    char buf[32];
    log_record r;
    log_begin(&r, LOG_INFO, "signal received: draining");
    log_str(&r, "signal", signals_name(sig, buf, sizeof buf));
    log_end(&r);
    health_set_serving(h, false);
    systemd_stopping();
    int64_t deadline = monotonic_ms() + svc->cfg->drain_timeout_ms;
    while (call_layer_admitted() > 0 && monotonic_ms() < deadline) {
        systemd_tick(sd, svc->workers);
        sleep_ms(10);
    }
    int left = call_layer_admitted();
    if (left > 0) {
        log_begin(&r, LOG_WARNING, "drain timeout: ending the calls still running");
        log_int(&r, "calls", left);
        log_end(&r);
    }
    /* Clients that keep calling get a second at most. */
    int64_t quiet_until = monotonic_ms() + 1000;
    wait_for_quiet(quiet_until < deadline ? quiet_until : deadline);
    health_end_watches(h);
    stop_server(srv, http);
    return deadline;
}

/* ---- start-up and shut-down as named steps (run) ---------------------------- */

enum { N_GRPC_HANDLERS = 10 };

/* The daemon: what start-up makes, in the order it makes it. */
typedef struct {
    const lmscored_config *cfg;
    service svc;
    health *health;
    api_keys *keys;
    rerank_profile profile; /* the rerank doors': gRPC's Rerank and the HTTP paths */
    http_api *http;         /* NULL without --http-listen */
    descriptor_pool *pool;
    rpc_score_handlers score;
    rpc_rerank_handlers rerank;
    rpc_info_handlers info;
    reflection_handlers refl;
    const call_handler *handlers[N_GRPC_HANDLERS];
    metrics_http *metrics; /* NULL without --metrics-listen */
    server *srv;
    lms_engine *engine;
} lmscored;

/* Step 1: what the daemon holds before it listens: health, the API keys,
 * the rerank profile, the HTTP API (not listening yet), the reflection
 * descriptors and the worker pool. False (logged) when one cannot be made. */
static bool init_daemon(lmscored *d, const lmscored_config *cfg)
{
    lms_error err = {0};
    d->cfg = cfg;
    d->svc.cfg = cfg;
    d->svc.worker_threads = worker_threads(cfg);
    atomic_init(&d->svc.phase, PHASE_LOADING);
    d->health = health_create();
    if (!d->health ||
        (cfg->api_key_file[0] && api_keys_load(cfg->api_key_file, &d->keys, &err) != LMS_OK) ||
        rerank_profile_load(cfg->rerank_profile, &d->profile, &err) != LMS_OK ||
        (cfg->http_listen[0] &&
         http_api_create(cfg, &d->svc, d->keys, &d->profile, &d->http, &err) != LMS_OK) ||
        descriptor_pool_load_served(&d->pool, &err) != LMS_OK ||
        worker_pool_start(cfg->workers, d->svc.worker_threads, cfg->queue_depth, &d->svc.workers,
                          &err) != LMS_OK) {
        log_error("startup failed", &err);
        return false;
    }
    if (d->keys) {
        log_record r;
        log_begin(&r, LOG_INFO, "API keys required");
        log_int(&r, "keys", (int64_t)api_keys_count(d->keys));
        log_str(&r, "file", cfg->api_key_file);
        log_end(&r);
    }
    return true;
}

/* Step 2: the gRPC methods' handlers, and the metrics of every path calls
 * come by: those methods' and the HTTP endpoints'. */
static void init_handlers(lmscored *d)
{
    rpc_score_init(&d->score, &d->svc);
    rpc_rerank_init(&d->rerank, &d->svc, &d->profile);
    rpc_info_init(&d->info, &d->svc);
    reflection_init(&d->refl, d->pool);
    const call_handler *handlers[N_GRPC_HANDLERS] = {&d->score.score,
                                                     &d->score.score_stream,
                                                     &d->score.score_items,
                                                     &d->rerank.rerank,
                                                     &d->info.tokenize,
                                                     &d->info.get_model_info,
                                                     health_check_handler(d->health),
                                                     health_watch_handler(d->health),
                                                     &d->refl.v1,
                                                     &d->refl.v1alpha};
    memcpy(d->handlers, handlers, sizeof handlers);
    const char *paths[N_GRPC_HANDLERS + HTTP_API_ENDPOINTS];
    int n_paths = 0;
    for (int i = 0; i < N_GRPC_HANDLERS; i++)
        paths[n_paths++] = d->handlers[i]->path;
    for (size_t i = 0; d->http && i < HTTP_API_ENDPOINTS; i++)
        paths[n_paths++] = http_api_handler(d->http, i)->path;
    metrics_init(paths, n_paths);
}

static void log_listening(const lmscored *d)
{
    log_record r;
    if (d->metrics) {
        log_begin(&r, LOG_INFO, "metrics listening");
        log_str(&r, "address", d->cfg->metrics_listen);
        log_int(&r, "port", metrics_http_port(d->metrics));
        log_end(&r);
    }
    log_begin(&r, LOG_INFO, "listening");
    log_str(&r, "address", d->cfg->listen);
    log_int(&r, "port", server_port(d->srv));
    log_str(&r, "tls", d->cfg->tls_cert[0] ? "on" : "off");
    log_end(&r);
}

/* Before a listener starts: false, having logged the port and the cause,
 * when its address cannot be bound. gRPC core would say only "cannot
 * listen" in its own words; every listen flag, HTTP's too, gets the same
 * record this way. */
static bool can_listen(const char *address, const char *flag)
{
    int port, errnum;
    lms_error err = {0};
    if (listen_addr_probe(address, flag, &port, &errnum, &err) == LMS_OK) return true;
    log_record r;
    log_begin(&r, LOG_ERR, "cannot listen");
    log_str(&r, "error", err.msg);
    log_str(&r, "field", flag);
    log_str(&r, "address", address);
    log_int(&r, "port", port);
    log_str(&r, "errno", strerrorname_np(errnum));
    log_str(&r, "cause", strerror(errnum));
    log_end(&r);
    return false;
}

/* Step 3: the listeners, /metrics first and gRPC last (health answers
 * NOT_SERVING from then on). False (logged) when one cannot start. */
static bool start_listeners(lmscored *d)
{
    const lmscored_config *cfg = d->cfg;
    lms_error err = {0};
    server_options so = {.listen = cfg->listen,
                         .tls_cert = cfg->tls_cert,
                         .tls_key = cfg->tls_key,
                         .max_message_bytes = cfg->max_message_bytes,
                         .max_receive_buffer = cfg->max_receive_buffer,
                         .connections = {.max_idle_ms = cfg->max_connection_idle_ms,
                                         .max_age_ms = cfg->max_connection_age_ms,
                                         .max_age_grace_ms = cfg->max_connection_age_grace_ms,
                                         .keepalive_time_ms = cfg->keepalive_time_ms,
                                         .keepalive_min_time_ms = cfg->keepalive_min_time_ms},
                         .keys = d->keys};
    if (cfg->metrics_listen[0] && !can_listen(cfg->metrics_listen, "metrics-listen")) return false;
    if (cfg->metrics_listen[0] &&
        metrics_http_start(cfg->metrics_listen, &d->svc, &d->metrics, &err) != LMS_OK) {
        log_error("cannot start the metrics server", &err);
        return false;
    }
    if (d->http && !can_listen(cfg->http_listen, "http-listen")) return false;
    if (d->http && http_api_start(d->http, &err) != LMS_OK) {
        log_error("cannot start the HTTP server", &err);
        return false;
    }
    if (!can_listen(cfg->listen, "listen")) return false;
    if (server_start(&so, d->handlers, N_GRPC_HANDLERS, &d->srv, &err) != LMS_OK) {
        log_error("cannot start the gRPC server", &err);
        return false;
    }
    log_listening(d);
    return true;
}

typedef enum { LOAD_SERVES, LOAD_STOPPED, LOAD_FAILED } load_outcome;

/* The bytes of a model: a GGUF file's size, or the sum of a Hugging Face
 * directory's *.safetensors files; -1 when the path cannot be read (the
 * load then says why). */
static int64_t model_bytes(const char *path, bool is_dir)
{
    struct stat st;
    if (!is_dir) return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
    DIR *dir = opendir(path);
    if (!dir) return -1;
    int64_t total = 0;
    char file[4096];
    for (struct dirent *e; (e = readdir(dir));) {
        size_t len = strlen(e->d_name);
        if (len < 12 || strcmp(e->d_name + len - 12, ".safetensors") != 0) continue;
        if ((size_t)snprintf(file, sizeof file, "%s/%s", path, e->d_name) < sizeof file &&
            stat(file, &st) == 0)
            total += st.st_size;
    }
    closedir(dir);
    return total;
}

static void log_loading(const char *path)
{
    struct stat st;
    bool is_dir = stat(path, &st) == 0 && S_ISDIR(st.st_mode);
    log_record r;
    log_begin(&r, LOG_INFO, "loading model");
    log_str(&r, "path", path);
    log_str(&r, "format", is_dir ? "safetensors" : "gguf");
    log_int(&r, "bytes", model_bytes(path, is_dir));
    log_end(&r);
}

/* Step 4: loads the model, taking signals; *stop_by is then the drain's
 * deadline had one begun. A stop signal meanwhile (LOAD_STOPPED), or a
 * model that does not load or fit the rerank profile (LOAD_FAILED), stops
 * the servers instead. */
static load_outcome load_engine(lmscored *d, int64_t *stop_by)
{
    lms_error err = {0};
    systemd_status("loading the model");
    log_loading(d->cfg->model_path);
    lms_status loaded = load_taking_signals(&d->svc, &d->engine, &err);
    *stop_by = monotonic_ms() + d->cfg->drain_timeout_ms;
    load_outcome outcome = LOAD_SERVES;
    if (loaded == LMS_ERR_CANCELLED) {
        systemd_stopping();
        outcome = LOAD_STOPPED;
    } else if (loaded != LMS_OK ||
               rerank_profile_bind_serving(&d->profile, d->engine, d->cfg->rerank_profile[0],
                                           &err) != LMS_OK) {
        log_error(loaded != LMS_OK ? "cannot load the model"
                                   : "the rerank profile does not fit the model",
                  &err);
        systemd_status("failed to load the model");
        outcome = LOAD_FAILED;
    }
    if (outcome != LOAD_SERVES) {
        atomic_store(&d->svc.phase, PHASE_DRAINING);
        stop_server(d->srv, d->http);
    }
    return outcome;
}

/* Step 5: serves until a stop signal, then drains; returns the drain's
 * deadline. */
static int64_t serve(lmscored *d, systemd_notifier *sd)
{
    d->svc.engine = d->engine;
    atomic_store(&d->svc.phase, PHASE_SERVING);
    health_set_serving(d->health, true);
    systemd_ready(sd);
    log_msg(LOG_INFO, "serving");
    int sig = serve_until_signal(&d->svc, sd);
    return drain(&d->svc, sig, d->health, d->srv, d->http, sd);
}

/* Step 6: the metrics endpoint, the workers (each by stop_by, or the
 * process leaves them behind), the gRPC server and the engine. */
static void stop_serving(lmscored *d, int64_t stop_by)
{
    metrics_http_stop(d->metrics);
    d->metrics = NULL;
    int64_t left_ms = stop_by - monotonic_ms();
    if (!worker_pool_stop(d->svc.workers, left_ms > 0 ? left_ms : 0))
        exit_leaving("an engine worker");
    d->svc.workers = NULL;
    server_destroy(d->srv);
    if (d->engine) lms_engine_close(d->engine);
}

/* Last: whatever start-up made and stop_serving did not end. */
static void free_daemon(lmscored *d)
{
    metrics_http_stop(d->metrics);
    http_api_free(d->http);
    rerank_profile_free(&d->profile);
    if (d->svc.workers) worker_pool_stop(d->svc.workers, -1);
    if (d->pool) descriptor_pool_free(d->pool);
    if (d->health) health_free(d->health);
    api_keys_free(d->keys);
}

static int run(const lmscored_config *cfg)
{
    lmscored d = {0};
    int rc = 1;
    if (init_daemon(&d, cfg)) {
        init_handlers(&d);
        if (start_listeners(&d)) {
            systemd_notifier sd;
            systemd_init(&sd);
            int64_t stop_by;
            load_outcome loaded = load_engine(&d, &stop_by);
            if (loaded == LOAD_SERVES) stop_by = serve(&d, &sd);
            stop_serving(&d, stop_by + STOP_GRACE_MS);
            rc = loaded == LOAD_FAILED;
        }
    }
    free_daemon(&d);
    if (rc == 0) log_msg(LOG_INFO, "stopped");
    return rc;
}

int main(int argc, char **argv)
{
    lmscored_config cfg;
    config_outcome outcome;
    lms_error err = {0};
    if (config_parse(argc, argv, &cfg, &outcome, &err) != LMS_OK) {
        fprintf(stderr, "lmscored: %s\n", err.msg);
        return 2;
    }
    if (outcome == CONFIG_EXIT) return 0;
    log_init(cfg.log_format, cfg.log_level);
    grpc_log_route();

    /* Every thread inherits the mask, so the signals wait for the main
     * thread. */
    signals_block();
    call_layer_init(cfg.max_message_bytes);
    grpc_init();
    int rc = run(&cfg);
    grpc_shutdown_blocking();
    return rc;
}
