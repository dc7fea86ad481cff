/*
 * systemd.h — sd_notify for a Type=notify unit: READY=1 once the model is
 * loaded and warmed, STATUS= lines with load and throughput, WATCHDOG=1 at
 * half of WATCHDOG_USEC but only while the engine workers make progress (a
 * worker stuck on one job for a whole watchdog period stops the pings, so
 * systemd restarts a hung engine), STOPPING=1 when the drain begins.
 * Without NOTIFY_SOCKET every call is a no-op.
 */
#ifndef LMSCORED_SYSTEMD_H
#define LMSCORED_SYSTEMD_H

#include <stdbool.h>
#include <stdint.h>

#include "workers.h"

typedef struct {
    uint64_t watchdog_usec; /* 0: no watchdog */
    int64_t last_ping_ms, last_status_ms;
    int64_t last_items;
    bool stalled; /* pings withheld (logged once per stall) */
} systemd_notifier;

void systemd_init(systemd_notifier *n);
/* How often systemd_tick should run. */
int64_t systemd_tick_ms(const systemd_notifier *n);
void systemd_status(const char *status);
void systemd_ready(systemd_notifier *n);
/* Pings the watchdog when due and workers progress; refreshes STATUS=. */
void systemd_tick(systemd_notifier *n, worker_pool *workers);
void systemd_stopping(void);

#endif
