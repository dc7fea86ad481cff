/*
 * http_listener.c — the HTTP/1.1 server behind the HTTP API and /metrics
 * (see http_listener.h): an acceptor thread (connection limits, refusal
 * instead of a listen queue, deadlines) and a few connection threads, each
 * an epoll loop over the connections it was given.
 *
 * Its files by role: this one starts and stops it; http_acceptor.c,
 * http_slots.c, http_connection.c and http_answer.c the rest
 * (http_listener_internal.h says what they share, and who owns what).
 *
 * TLS is OpenSSL's (tls.c builds the context): the daemon already links
 * it to check the PEM files, its nonblocking SSL_accept/SSL_read/SSL_write
 * report WANT_READ or WANT_WRITE, which map onto the epoll interest, and
 * no new package is needed (GnuTLS would be one more library for the same
 * work).
 */
#include "http_listener.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "http_listener_internal.h"
#include "listen_addr.h"
#include "tls.h"

static const char REFUSAL_TEXT[] = "too many connections\n";
static const char REFUSAL_HEAD[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Connection: close\r\n"
                                   "Content-Type: %s\r\n"
                                   "Retry-After: 1\r\n"
                                   "Content-Length: %zu\r\n"
                                   "\r\n"
                                   "%s";

static lms_status open_socket(const char *address, const char *flag, http_listener *l,
                              lms_error *err)
{
    struct addrinfo *ai = NULL;
    lms_status st = listen_addr_resolve(address, flag, &ai, err);
    if (st != LMS_OK) return st;
    int one = 1;
    l->listen_fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (l->listen_fd < 0 ||
        setsockopt(l->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(l->listen_fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
        listen(l->listen_fd, LISTEN_BACKLOG) != 0)
        st = lms_fail(err, LMS_ERR_IO, "bind_failed", flag, "cannot listen on %s: %s", address,
                      strerror(errno));
    freeaddrinfo(ai);
    if (st != LMS_OK) return st;
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    if (getsockname(l->listen_fd, (struct sockaddr *)&bound, &len) == 0)
        l->port = listen_addr_port((struct sockaddr *)&bound);
    return LMS_OK;
}

static lms_status start_workers(http_listener *l, lms_error *err)
{
    l->n_workers = l->opt.threads ? l->opt.threads : 1;
    if (!(l->workers = calloc(l->n_workers, sizeof *l->workers)))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    for (unsigned i = 0; i < l->n_workers; i++) {
        l->workers[i].ep = l->workers[i].ev = -1;
        pthread_mutex_init(&l->workers[i].mu, NULL);
    }
    for (unsigned i = 0; i < l->n_workers; i++) {
        worker *w = &l->workers[i];
        w->l = l;
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        w->ev = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
        if (w->ep < 0 || w->ev < 0 || epoll_ctl(w->ep, EPOLL_CTL_ADD, w->ev, &ev) != 0)
            return lms_fail(err, LMS_ERR_IO, NULL, l->opt.flag, "epoll: %s", strerror(errno));
        if (pthread_create(&w->thread, NULL, http_worker_main, w) != 0)
            return lms_fail(err, LMS_ERR_NOMEM, NULL, l->opt.flag,
                            "cannot start an HTTP connection thread");
        w->started = true;
    }
    return LMS_OK;
}

lms_status http_listener_start(const http_listener_options *opt, http_listener **out,
                               lms_error *err)
{
    /* room for as many connections closing as counted */
    int n_slots = 2 * opt->limits.max_connections;
    http_listener *l = calloc(1, sizeof *l);
    conn_slot *slots = calloc((size_t)n_slots, sizeof *slots);
    if (!l || !slots) {
        free(l);
        free(slots);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    l->opt = *opt;
    l->slots = slots;
    l->n_slots = n_slots;
    l->listen_fd = l->wake[0] = l->wake[1] = -1;
    /* the request line (method, target, version, CRLF), the field lines
     * and the blank lines before and after them */
    l->in_max =
        opt->parse_limits.max_target + opt->parse_limits.max_fields_bytes + HTTP1_MAX_METHOD + 64;
    atomic_init(&l->stopping, false);
    pthread_mutex_init(&l->mu, NULL);
    const char *body = opt->refusal ? opt->refusal : REFUSAL_TEXT;
    const char *type = opt->refusal ? opt->refusal_type : "text/plain; charset=utf-8";
    size_t len = strlen(body), room = sizeof REFUSAL_HEAD + strlen(type) + 24 + len;
    lms_status st = LMS_OK;
    if (!(l->refusal = malloc(room)))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    else
        l->refusal_len = (size_t)snprintf(l->refusal, room, REFUSAL_HEAD, type, len, body);
    if (st == LMS_OK && opt->tls_cert) {
        tls_pem_pair pem = {.cert = (char *)opt->tls_cert, .key = (char *)opt->tls_key};
        if (!(l->tls = tls_server_context(&pem, err))) st = err->status;
    }
    if (st == LMS_OK) st = open_socket(opt->address, opt->flag, l, err);
    if (st == LMS_OK && pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = lms_fail(err, LMS_ERR_IO, NULL, opt->flag, "pipe: %s", strerror(errno));
    if (st == LMS_OK) st = start_workers(l, err);
    if (st == LMS_OK && pthread_create(&l->acceptor, NULL, http_acceptor_main, l) != 0)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, opt->flag, "cannot start the HTTP acceptor thread");
    l->acceptor_started = st == LMS_OK;
    if (st != LMS_OK) {
        http_listener_stop(l);
        return st;
    }
    *out = l;
    return LMS_OK;
}

int http_listener_port(const http_listener *l)
{
    return l->port;
}

/* On stop: a connection reading a request is closed, so that no request
 * is read that would not be answered; the answers of the others get
 * STOP_GRACE_MS to go out. */
static void let_answers_out(http_listener *l)
{
    int64_t until = monotonic_ms() + STOP_GRACE_MS;
    for (;;) {
        int answering = 0;
        pthread_mutex_lock(&l->mu);
        for (int i = 0; i < l->n_slots; i++) {
            conn_slot *s = &l->slots[i];
            if (!s->used || s->shut) continue;
            if (slot_reading(s))
                slot_shut_locked(s);
            else
                answering++;
        }
        pthread_mutex_unlock(&l->mu);
        if (!answering || monotonic_ms() >= until) return;
        struct timespec pause = {0, 10 * 1000000};
        nanosleep(&pause, NULL);
    }
}

void http_listener_stop(http_listener *l)
{
    if (!l) return;
    if (l->acceptor_started) {
        atomic_store(&l->stopping, true);
        ssize_t w = write(l->wake[1], "x", 1);
        (void)w;
        pthread_join(l->acceptor, NULL);
        let_answers_out(l);
    }
    for (unsigned i = 0; l->workers && i < l->n_workers; i++) {
        worker *w = &l->workers[i];
        if (w->started) {
            pthread_mutex_lock(&w->mu);
            w->stop = true;
            pthread_mutex_unlock(&w->mu);
            http_worker_wake(w);
            pthread_join(w->thread, NULL);
        }
        if (w->ep >= 0) close(w->ep);
        if (w->ev >= 0) close(w->ev);
        pthread_mutex_destroy(&w->mu);
    }
    if (l->listen_fd >= 0) close(l->listen_fd);
    if (l->wake[0] >= 0) close(l->wake[0]);
    if (l->wake[1] >= 0) close(l->wake[1]);
    SSL_CTX_free(l->tls);
    pthread_mutex_destroy(&l->mu);
    free(l->refusal);
    free(l->workers);
    free(l->slots);
    free(l);
}
