/*
 * health.c — grpc.health.v1.Health over the call layer. Watch streams are
 * kept in a list; a status change sends to each idle stream at once and
 * marks busy ones dirty, so they send the latest status when their message
 * in flight has left (a slow watcher gets the newest status, never a queue).
 */
#include "health.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grpc/health/v1/health.pb-c.h"

typedef struct watcher {
    call *c;
    int service_status; /* what this watcher's service reports: SERVICE_UNKNOWN or the server's */
    bool sending, dirty;
    struct watcher *next;
} watcher;

struct health {
    pthread_mutex_t mu;
    bool serving;
    watcher *watchers;
    call_handler check, watch;
};

static const char *const known_services[] = {"", "lmscore.v1.ScoreService"};

static bool is_known(const char *service)
{
    for (size_t i = 0; i < sizeof known_services / sizeof known_services[0]; i++)
        if (strcmp(service, known_services[i]) == 0) return true;
    return false;
}

static Grpc__Health__V1__HealthCheckResponse__ServingStatus current(const health *h)
{
    return h->serving ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVING
                      : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__NOT_SERVING;
}

static Grpc__Health__V1__HealthCheckRequest *unpack_request(call *c, const uint8_t *msg, size_t len)
{
    return (Grpc__Health__V1__HealthCheckRequest *)call_unpack(
        c, &grpc__health__v1__health_check_request__descriptor, msg, len);
}

static void on_check(call *c, const uint8_t *msg, size_t len)
{
    health *h = call_ctx(c);
    Grpc__Health__V1__HealthCheckRequest *req = unpack_request(c, msg, len);
    if (!req) return;
    if (!is_known(req->service)) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_NOT_FOUND, NULL, NULL, "unknown service '%s'",
                       req->service);
        call_finish(c, &st);
    } else {
        Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
        pthread_mutex_lock(&h->mu);
        resp.status = current(h);
        pthread_mutex_unlock(&h->mu);
        call_reply(c, &resp.base);
    }
    grpc__health__v1__health_check_request__free_unpacked(req, NULL);
}

/* Sends w's current status. Caller holds h->mu and checked !w->sending. */
static void watcher_send_locked(health *h, watcher *w)
{
    Grpc__Health__V1__HealthCheckResponse resp = GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__INIT;
    resp.status = w->service_status ==
                          GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN
                      ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN
                      : current(h);
    w->dirty = false;
    w->sending = call_send(w->c, &resp.base) == CALL_SENT;
}

static void on_watch(call *c, const uint8_t *msg, size_t len)
{
    health *h = call_ctx(c);
    Grpc__Health__V1__HealthCheckRequest *req = unpack_request(c, msg, len);
    if (!req) return;
    watcher *w = calloc(1, sizeof *w);
    if (!w) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
    } else {
        w->c = c;
        w->service_status =
            is_known(req->service)
                ? GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__UNKNOWN
                : GRPC__HEALTH__V1__HEALTH_CHECK_RESPONSE__SERVING_STATUS__SERVICE_UNKNOWN;
        call_ref(c); /* the list's reference, dropped in on_watch_close */
        call_set_state(c, w);
        pthread_mutex_lock(&h->mu);
        w->next = h->watchers;
        h->watchers = w;
        watcher_send_locked(h, w);
        pthread_mutex_unlock(&h->mu);
    }
    grpc__health__v1__health_check_request__free_unpacked(req, NULL);
}

static void on_watch_sent(call *c)
{
    health *h = call_ctx(c);
    watcher *w = call_state(c);
    pthread_mutex_lock(&h->mu);
    w->sending = false;
    if (w->dirty) watcher_send_locked(h, w);
    pthread_mutex_unlock(&h->mu);
}

static void on_watch_close(call *c, bool cancelled)
{
    (void)cancelled;
    health *h = call_ctx(c);
    watcher *w = call_state(c);
    if (!w) return;
    pthread_mutex_lock(&h->mu);
    for (watcher **p = &h->watchers; *p; p = &(*p)->next) {
        if (*p == w) {
            *p = w->next;
            break;
        }
    }
    pthread_mutex_unlock(&h->mu);
    call_unref(c);
}

health *health_create(void)
{
    health *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    pthread_mutex_init(&h->mu, NULL);
    h->check = (call_handler){.path = "/grpc.health.v1.Health/Check",
                              .shape = CALL_UNARY,
                              .open = true,
                              .ctx = h,
                              .on_message = on_check};
    h->watch = (call_handler){.path = "/grpc.health.v1.Health/Watch",
                              .shape = CALL_SERVER_STREAMING,
                              .open = true,
                              .ctx = h,
                              .on_message = on_watch,
                              .on_sent = on_watch_sent,
                              .on_close = on_watch_close,
                              .free_state = free};
    return h;
}

void health_free(health *h)
{
    pthread_mutex_destroy(&h->mu);
    free(h);
}

const call_handler *health_check_handler(health *h)
{
    return &h->check;
}

const call_handler *health_watch_handler(health *h)
{
    return &h->watch;
}

void health_set_serving(health *h, bool serving)
{
    pthread_mutex_lock(&h->mu);
    h->serving = serving;
    for (watcher *w = h->watchers; w; w = w->next) {
        if (w->sending)
            w->dirty = true;
        else
            watcher_send_locked(h, w);
    }
    pthread_mutex_unlock(&h->mu);
}

void health_end_watches(health *h)
{
    rpc_status ok;
    rpc_status_ok(&ok);
    pthread_mutex_lock(&h->mu);
    for (watcher *w = h->watchers; w; w = w->next)
        call_finish(w->c, &ok);
    pthread_mutex_unlock(&h->mu);
}
