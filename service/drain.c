/*
 * drain.c — lmscored while it serves and when it stops (see daemon.h): the
 * signals the main thread takes (SIGUSR1's state record), the memory
 * handed back after a burst, and the drain: health NOT_SERVING, new calls
 * refused, the calls in flight finished up to --drain-timeout, then the
 * servers stopped.
 */
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
#include <signal.h>
#include <stdatomic.h>

#include "clock.h"
#include "daemon.h"

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
void daemon_on_signal(int sig, const service *svc)
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
int daemon_serve_until_signal(const service *svc, systemd_notifier *sd)
{
    trim_state trim = {.trims_left = TRIM_QUIET_TICKS};
    for (;;) {
        int sig = signals_wait(systemd_tick_ms(sd));
        if (sig && signals_action(sig) == SIGNAL_STOP) return sig;
        if (sig) daemon_on_signal(sig, svc);
        systemd_tick(sd, svc->workers);
        trim_after_burst(&trim);
    }
}

/* Ends the calls still running when the server stops: UNAVAILABLE, so a
 * client retries them elsewhere. */
void daemon_stop_server(server *srv, http_api *http)
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
        daemon_sleep_ms(DRAIN_QUIET_MS - quiet_ms < 10 ? DRAIN_QUIET_MS - quiet_ms : 10);
    }
}

/* The log line comes after the phase changes: once it is written, every new
 * call is refused (tests and operators wait for it). Returns the drain's
 * deadline. */
int64_t daemon_drain(service *svc, int sig, health *h, server *srv, http_api *http,
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
        daemon_sleep_ms(10);
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
    daemon_stop_server(srv, http);
    return deadline;
}
