/*
 * exposition.h — renders the daemon's metrics for a scrape of /metrics:
 * the Prometheus text format (0.0.4) or OpenMetrics 1.0.
 */
#ifndef LMSCORED_EXPOSITION_H
#define LMSCORED_EXPOSITION_H

#include <stdbool.h>
#include <stddef.h>

#include "service.h"

#define EXPOSITION_TEXT_TYPE        "text/plain; version=0.0.4; charset=utf-8"
#define EXPOSITION_OPENMETRICS_TYPE "application/openmetrics-text; version=1.0.0; charset=utf-8"

/* The exposition as a malloc'd buffer of *len bytes (free it); NULL when
 * out of memory. Safe from any thread while the service lives. */
char *exposition_render(service *svc, bool openmetrics, size_t *len);

#endif
