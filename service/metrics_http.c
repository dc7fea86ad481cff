/*
 * metrics_http.c — the /metrics endpoint: libmicrohttpd on its own port and
 * thread, answering GET (and HEAD) /metrics with the exposition, OpenMetrics
 * when the scraper's Accept header asks for it. Nothing else is served.
 */
#include "metrics_http.h"

#include <microhttpd.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "exposition.h"
#include "log.h"

struct metrics_http {
    struct MHD_Daemon *daemon;
    service *svc;
    int port;
};

static enum MHD_Result respond_text(struct MHD_Connection *conn, unsigned status, const char *body)
{
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
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
    enum MHD_Result ret = MHD_queue_response(conn, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
    return ret;
}

static void log_mhd(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    log_record r;
    log_begin(&r, LOG_WARNING, "metrics server");
    log_str(&r, "error", msg);
    log_end(&r);
}

/* "host:port" or "[v6]:port" -> the address to bind. */
static lms_status resolve(const char *listen, struct addrinfo **out, lms_error *err)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    size_t host_len = colon ? (size_t)(colon - listen) : 0;
    if (!colon || host_len == 0 || host_len >= sizeof host || !colon[1])
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", "metrics-listen",
                        "--metrics-listen '%s' is not HOST:PORT", listen);
    memcpy(host, listen, host_len);
    host[host_len] = '\0';
    const char *h = host;
    if (host[0] == '[' && host[host_len - 1] == ']') {
        host[host_len - 1] = '\0';
        h = host + 1;
    }
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    int rc = getaddrinfo(h, colon + 1, &hints, out);
    if (rc != 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", "metrics-listen",
                        "--metrics-listen '%s': %s", listen, gai_strerror(rc));
    return LMS_OK;
}

lms_status metrics_http_start(const char *listen, service *svc, metrics_http **out, lms_error *err)
{
    metrics_http *m = calloc(1, sizeof *m);
    if (!m) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    m->svc = svc;
    struct addrinfo *ai = NULL;
    lms_status st = resolve(listen, &ai, err);
    if (st != LMS_OK) {
        free(m);
        return st;
    }
    unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
    if (ai->ai_family == AF_INET6) flags |= MHD_USE_IPv6;
    /* A few scrapers at a time; a stuck one is dropped after 10 s. */
    m->daemon =
        MHD_start_daemon(flags, 0, NULL, NULL, on_request, m, MHD_OPTION_EXTERNAL_LOGGER, log_mhd,
                         NULL, MHD_OPTION_SOCK_ADDR, ai->ai_addr, MHD_OPTION_CONNECTION_LIMIT,
                         (unsigned)16, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    freeaddrinfo(ai);
    if (!m->daemon) {
        free(m);
        return lms_fail(err, LMS_ERR_IO, NULL, "metrics-listen",
                        "cannot serve metrics on %s (address in use or not local?)", listen);
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(m->daemon, MHD_DAEMON_INFO_BIND_PORT);
    m->port = info ? info->port : 0;
    *out = m;
    return LMS_OK;
}

int metrics_http_port(const metrics_http *m)
{
    return m->port;
}

void metrics_http_stop(metrics_http *m)
{
    if (!m) return;
    MHD_stop_daemon(m->daemon);
    free(m);
}
