/*
 * metrics_http.c — the /metrics endpoint: libmicrohttpd on its own port and
 * threads (behind http_listener's limits), answering GET (and HEAD) /metrics
 * with the exposition, OpenMetrics when the scraper's Accept header asks for
 * it, one request per connection. Nothing else is served.
 */
#include "metrics_http.h"

#include <microhttpd.h>
#include <stdlib.h>
#include <string.h>

#include "exposition.h"
#include "http_listener.h"

struct metrics_http {
    http_listener *listener;
    service *svc;
};

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    enum MHD_Result ret = MHD_queue_response(conn, status, r);
    MHD_destroy_response(r);
    return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    metrics_http *m = cls;
    (void)version;
    (void)upload_data;
    (void)upload_data_size;
    (void)req_cls;
    if (strcmp(url, "/metrics") != 0) return respond_text(conn, MHD_HTTP_NOT_FOUND, "not found\n");
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
        return respond_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");

    const char *accept = MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_ACCEPT);
    bool openmetrics = accept && strstr(accept, "application/openmetrics-text");
    size_t len = 0;
    char *body = exposition_render(m->svc, openmetrics, &len);
    if (!body) return respond_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
                            openmetrics ? EXPOSITION_OPENMETRICS_TYPE : EXPOSITION_TEXT_TYPE);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
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
    const http_listener_options opt = {.address = listen,
                                       .flag = "metrics-listen",
                                       .name = "HTTP server",
                                       .limits = {.max_connections = 64,
                                                  .max_per_peer = 8,
                                                  .header_ms = 5000,
                                                  .body_min_rate = 1024,
                                                  .lifetime_ms = 5000},
                                       .threads = 1,
                                       .handler = on_request,
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
