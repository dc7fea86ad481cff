/*
 * main.c — lmscored: configuration, startup order, signals and the drain.
 * run() is the start-up and shut-down as named steps, in order:
 * init_daemon, init_handlers, start_listeners, load_engine, serve (which
 * drains), stop_serving, free_daemon. The model load is load.c's, serving
 * and the drain drain.c's (daemon.h).
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
#include <dirent.h>
#include <grpc/grpc.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "daemon.h"

void daemon_sleep_ms(int64_t ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, NULL);
}

void daemon_log_error(const char *what, const lms_error *err)
{
    log_record r;
    log_begin(&r, LOG_ERR, what);
    log_str(&r, "error", err->msg);
    log_str(&r, "status", lms_status_name(err->status));
    if (err->field[0]) log_str(&r, "field", err->field);
    log_end(&r);
}

/* Exits at once, leaving behind work that did not stop by its deadline. */
_Noreturn void daemon_exit_leaving(const char *what)
{
    log_record r;
    log_begin(&r, LOG_ERR, "did not stop in time: exiting without it");
    log_str(&r, "what", what);
    log_end(&r);
    _exit(1);
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
    d->svc.worker_threads = daemon_worker_threads(cfg);
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
        daemon_log_error("startup failed", &err);
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
        daemon_log_error("cannot start the metrics server", &err);
        return false;
    }
    if (d->http && !can_listen(cfg->http_listen, "http-listen")) return false;
    if (d->http && http_api_start(d->http, &err) != LMS_OK) {
        daemon_log_error("cannot start the HTTP server", &err);
        return false;
    }
    if (!can_listen(cfg->listen, "listen")) return false;
    if (server_start(&so, d->handlers, N_GRPC_HANDLERS, &d->srv, &err) != LMS_OK) {
        daemon_log_error("cannot start the gRPC server", &err);
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
    lms_status loaded = daemon_load_taking_signals(&d->svc, &d->engine, &err);
    *stop_by = monotonic_ms() + d->cfg->drain_timeout_ms;
    load_outcome outcome = LOAD_SERVES;
    if (loaded == LMS_ERR_CANCELLED) {
        systemd_stopping();
        outcome = LOAD_STOPPED;
    } else if (loaded != LMS_OK ||
               rerank_profile_bind_serving(&d->profile, d->engine, d->cfg->rerank_profile[0],
                                           &err) != LMS_OK) {
        daemon_log_error(loaded != LMS_OK ? "cannot load the model"
                                          : "the rerank profile does not fit the model",
                         &err);
        systemd_status("failed to load the model");
        outcome = LOAD_FAILED;
    }
    if (outcome != LOAD_SERVES) {
        atomic_store(&d->svc.phase, PHASE_DRAINING);
        daemon_stop_server(d->srv, d->http);
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
    int sig = daemon_serve_until_signal(&d->svc, sd);
    return daemon_drain(&d->svc, sig, d->health, d->srv, d->http, sd);
}

/* Step 6: the metrics endpoint, the workers (each by stop_by, or the
 * process leaves them behind), the gRPC server and the engine. */
static void stop_serving(lmscored *d, int64_t stop_by)
{
    metrics_http_stop(d->metrics);
    d->metrics = NULL;
    int64_t left_ms = stop_by - monotonic_ms();
    if (!worker_pool_stop(d->svc.workers, left_ms > 0 ? left_ms : 0))
        daemon_exit_leaving("an engine worker");
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
