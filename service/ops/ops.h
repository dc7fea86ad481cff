/*
 * ops/ — running the daemon as a service of its host: systemd's notify
 * protocol and watchdog (systemd), the signals it takes over (signals), and
 * the Prometheus endpoint (metrics_http: GET /metrics on its own address;
 * exposition: the registry and the process's standard metrics,
 * process_stats, rendered as text or OpenMetrics).
 *
 * Includes: core/, transport/, base/. Nothing includes ops/ but main.c.
 */
#ifndef LMSCORED_OPS_H
#define LMSCORED_OPS_H

#include "metrics_http.h"
#include "signals.h"
#include "systemd.h"

#endif
