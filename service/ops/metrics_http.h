/*
 * metrics_http.h — the Prometheus scrape endpoint (GET /metrics) on its own
 * address (--metrics-listen), served by an http_listener of its own thread.
 */
#ifndef LMSCORED_METRICS_HTTP_H
#define LMSCORED_METRICS_HTTP_H

#include "service.h"
#include "lmscore.h"

typedef struct metrics_http metrics_http;

/* Binds listen (HOST:PORT; port 0 picks one) and serves svc's metrics
 * until metrics_http_stop. */
lms_status metrics_http_start(const char *listen, service *svc, metrics_http **out, lms_error *err);
int metrics_http_port(const metrics_http *m);
/* Stops serving (waits for a scrape in progress); NULL is a no-op. */
void metrics_http_stop(metrics_http *m);

#endif
