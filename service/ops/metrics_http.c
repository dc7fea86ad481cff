/*
 * metrics_http.c — the /metrics endpoint: an http_listener on its own port
 * and thread, answering GET (and HEAD) /metrics
 * with the exposition, OpenMetrics when the scraper's Accept header asks for
 * it, one request per connection. Nothing else is served.
 */
#include "metrics_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exposition.h"
#include "http_listener.h"

struct metrics_http {
    http_listener *listener;
    service *svc;
};

static void answer_text(http_request *rq, unsigned status, const char *body)
{
    const http_answer a = {.status = status,
                           .body = body,
                           .body_len = strlen(body),
                           .headers = status == 405 ? "Allow: GET, HEAD\r\n" : NULL,
                           .close = true,
                           .head_only = strcmp(rq->method, "HEAD") == 0};
    http_request_answer(rq, &a);
}

/* Every request is answered from its head: a body is not read (the
 * connection closes after the answer). */
static void *on_begin(void *cls, http_request *rq)
{
    metrics_http *m = cls;
    bool head = strcmp(rq->method, "HEAD") == 0;
    if (strcmp(rq->path, "/metrics") != 0) {
        answer_text(rq, 404, "not found\n");
        return m;
    }
    if (!head && strcmp(rq->method, "GET") != 0) {
        answer_text(rq, 405, "only GET and HEAD\n");
        return m;
    }
    size_t accept_len = 0;
    const char *accept = http1_field_value(rq->parsed, rq->head, "accept", &accept_len);
    bool openmetrics = accept && memmem(accept, accept_len, "application/openmetrics-text",
                                        sizeof "application/openmetrics-text" - 1);
    size_t len = 0;
    char *body = exposition_render(m->svc, openmetrics, &len);
    if (!body) {
        answer_text(rq, 500, "out of memory\n");
        return m;
    }
    const http_answer a = {.status = 200,
                           .content_type =
                               openmetrics ? EXPOSITION_OPENMETRICS_TYPE : EXPOSITION_TEXT_TYPE,
                           .body = body,
                           .body_len = len,
                           .close = true,
                           .head_only = head};
    http_request_answer(rq, &a);
    free(body);
    return m;
}

/* A request the parser refused, as text like every answer here. */
static void on_refused(void *cls, const http1_error *e, http_answer *out, char *buf, size_t cap)
{
    (void)cls;
    int n = snprintf(buf, cap, "%s\n", e->message);
    *out = (http_answer){
        .status = e->status, .body = buf, .body_len = n > 0 && (size_t)n < cap ? (size_t)n : 0};
}

lms_status metrics_http_start(const char *listen, service *svc, metrics_http **out, lms_error *err)
{
    metrics_http *m = calloc(1, sizeof *m);
    if (!m) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    m->svc = svc;
    /* Scrapers are few (a Prometheus or two, a person with curl) and a
     * scrape takes milliseconds; the limits leave them room whatever else
     * connects, and a scrape still gets its whole deadline under Prometheus'
     * default 10 s scrape timeout. */
    const http_listener_options opt = {
        .address = listen,
        .flag = "metrics-listen",
        .limits = {.max_connections = 64,
                   .max_per_peer = 8,
                   .header_ms = 5000,
                   .body_min_rate = 1024,
                   .lifetime_ms = 5000},
        .parse_limits = {.max_target = 8 << 10, .max_fields_bytes = 16 << 10},
        .threads = 1,
        .handler = {.begin = on_begin, .refused = on_refused},
        .cls = m};
    lms_status st = http_listener_start(&opt, &m->listener, err);
    if (st != LMS_OK) {
        free(m);
        return st;
    }
    *out = m;
    return LMS_OK;
}

int metrics_http_port(const metrics_http *m)
{
    return http_listener_port(m->listener);
}

void metrics_http_stop(metrics_http *m)
{
    if (!m) return;
    http_listener_stop(m->listener);
    free(m);
}
