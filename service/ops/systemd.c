/*
 * systemd.c — readiness, status, watchdog and stopping notifications (see
 * systemd.h).
 */
#include "systemd.h"

#include <stdio.h>
#include <systemd/sd-daemon.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"

#define STATUS_PERIOD_MS 5000

void systemd_init(systemd_notifier *n)
{
    *n = (systemd_notifier){0};
    uint64_t usec = 0;
    if (sd_watchdog_enabled(0, &usec) > 0) n->watchdog_usec = usec;
    n->last_ping_ms = n->last_status_ms = monotonic_ms();
}

int64_t systemd_tick_ms(const systemd_notifier *n)
{
    if (!n->watchdog_usec) return 1000;
    int64_t half = (int64_t)(n->watchdog_usec / 2000);
    /* tick four times per ping period: a ping is at most a quarter late */
    int64_t tick = half / 4;
    return tick < 1 ? 1 : tick > 1000 ? 1000 : tick;
}

void systemd_status(const char *status)
{
    sd_notifyf(0, "STATUS=%s", status);
}

static void send_load_status(systemd_notifier *n, int64_t now)
{
    metrics_snapshot s;
    metrics_snapshot_get(&s);
    double secs = (double)(now - n->last_status_ms) / 1000.0;
    double rate = secs > 0 ? (double)(s.items_total - n->last_items) / secs : 0.0;
    char line[256];
    snprintf(line, sizeof line,
             "serving: %d scoring calls in flight, %d jobs, %.1f items/s, %lld requests, "
             "%lld items",
             s.in_flight_calls, s.in_flight_jobs, rate, (long long)s.requests_total,
             (long long)s.items_total);
    systemd_status(line);
    n->last_items = s.items_total;
    n->last_status_ms = now;
}

void systemd_ready(systemd_notifier *n)
{
    int64_t now = monotonic_ms();
    sd_notify(0, "READY=1");
    send_load_status(n, now);
    if (n->watchdog_usec) {
        sd_notify(0, "WATCHDOG=1");
        n->last_ping_ms = now;
    }
}

void systemd_tick(systemd_notifier *n, worker_pool *workers)
{
    int64_t now = monotonic_ms();
    if (n->watchdog_usec && now - n->last_ping_ms >= (int64_t)(n->watchdog_usec / 2000)) {
        int64_t stalled = worker_pool_stalled_ms(workers);
        if (stalled < (int64_t)(n->watchdog_usec / 1000)) {
            sd_notify(0, "WATCHDOG=1");
            n->last_ping_ms = now;
            n->stalled = false;
        } else if (!n->stalled) {
            n->stalled = true;
            log_record r;
            log_begin(&r, LOG_ERR, "an engine worker is stuck: withholding the watchdog ping");
            log_int(&r, "stalled_ms", stalled);
            log_end(&r);
        }
    }
    if (now - n->last_status_ms >= STATUS_PERIOD_MS) send_load_status(n, now);
}

void systemd_stopping(void)
{
    sd_notify(0, "STOPPING=1\nSTATUS=draining: finishing in-flight calls, refusing new ones");
}
