/*
 * http_acceptor.c — the HTTP listener's acceptor thread (see
 * http_listener_internal.h): every connection accepted at once (the
 * listen queue never grows), admitted to a slot and a connection thread or
 * refused with a 503 that closes in stages, and the sweep that shuts the
 * connections past their deadline.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "http_listener_internal.h"

static void forget_refused(http_listener *l, int i)
{
    close(l->refused[i].fd);
    memmove(&l->refused[i], &l->refused[i + 1],
            (size_t)(l->n_refused - i - 1) * sizeof *l->refused);
    l->n_refused--;
}

/* Answers 503 and closes in stages (RFC 9112 9.6): closed at once with the
 * client's request unread, the connection would be reset, and the client
 * would likely see the reset, not the answer. */
static void refuse(http_listener *l, int fd)
{
    /* best effort: the answer fits any socket buffer, and a peer that is
     * gone gets nothing; a TLS client sees the connection close */
    ssize_t sent = l->tls ? 0 : send(fd, l->refusal, l->refusal_len, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
    shutdown(fd, SHUT_WR);
    if (l->n_refused == MAX_REFUSED) forget_refused(l, 0);
    l->refused[l->n_refused++] =
        (refused_conn){.fd = fd, .until_ms = monotonic_ms() + LINGER_MS, .dropped = 0};
}

/* Reads and drops what a refused client sends; true when its connection
 * is done with (the client closed, or sent too much). */
static bool drain_refused(refused_conn *r)
{
    char drop[4096];
    for (;;) {
        ssize_t n = recv(r->fd, drop, sizeof drop, 0);
        if (n > 0 && (r->dropped += (size_t)n) <= LINGER_BYTES) continue;
        return !(n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
    }
}

static void admit(http_listener *l, int fd, const struct sockaddr_storage *peer)
{
    conn *c = calloc(1, sizeof *c);
    SSL *ssl = c && l->tls ? SSL_new(l->tls) : NULL;
    if (!c || (l->tls && (!ssl || SSL_set_fd(ssl, fd) != 1))) {
        SSL_free(ssl);
        free(c);
        ERR_clear_error();
        refuse(l, fd);
        return;
    }
    pthread_mutex_lock(&l->mu);
    conn_slot *s = slots_take_locked(l, peer);
    if (!s) {
        pthread_mutex_unlock(&l->mu);
        SSL_free(ssl);
        free(c);
        refuse(l, fd);
        return;
    }
    int64_t now = monotonic_ms();
    int lowat = ANSWER_QUEUE_BYTES; /* best effort: without it, the send buffer bounds */
    setsockopt(fd, IPPROTO_TCP, TCP_NOTSENT_LOWAT, &lowat, sizeof lowat);
    *s = (conn_slot){.used = true,
                     .fd = fd,
                     .peer = *peer,
                     .accepted_ms = now,
                     .phase = PHASE_HEADERS,
                     .since_ms = now};
    pthread_mutex_unlock(&l->mu);
    c->fd = fd;
    c->slot = s;
    c->ssl = ssl;
    if (ssl) SSL_set_accept_state(ssl);
    worker *w = &l->workers[l->next_worker++ % l->n_workers];
    c->w = w;
    pthread_mutex_lock(&w->mu);
    c->queue_next = w->incoming;
    w->incoming = c;
    pthread_mutex_unlock(&w->mu);
    http_worker_wake(w);
}

static void accept_pending(http_listener *l)
{
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        int fd =
            accept4(l->listen_fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(l, fd, &peer);
            continue;
        }
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
            /* out of descriptors or memory: the connection waits in the
             * queue rather than the acceptor spinning on it */
            struct timespec pause = {0, 10 * 1000000};
            nanosleep(&pause, NULL);
        }
        return;
    }
}

/* Shuts the connections past their deadline. */
static void sweep(http_listener *l)
{
    int64_t now = monotonic_ms();
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n_slots; i++) {
        conn_slot *s = &l->slots[i];
        if (s->used && !s->shut && now >= slot_deadline(l, s)) slot_shut_locked(s);
    }
    pthread_mutex_unlock(&l->mu);
}

void *http_acceptor_main(void *arg)
{
    http_listener *l = arg;
    struct pollfd polled[2 + MAX_REFUSED] = {{.fd = l->listen_fd, .events = POLLIN},
                                             {.fd = l->wake[0], .events = POLLIN}};
    while (!atomic_load(&l->stopping)) {
        int n = l->n_refused;
        for (int i = 0; i < n; i++)
            polled[2 + i] = (struct pollfd){.fd = l->refused[i].fd, .events = POLLIN};
        bool ready = poll(polled, (nfds_t)(2 + n), SWEEP_MS) > 0;
        /* the refused before the accept: it may refuse more */
        int64_t now = monotonic_ms();
        for (int i = n - 1; i >= 0; i--) {
            refused_conn *r = &l->refused[i];
            if ((ready && polled[2 + i].revents && drain_refused(r)) || now >= r->until_ms)
                forget_refused(l, i);
        }
        if (ready && (polled[0].revents & POLLIN)) accept_pending(l);
        sweep(l);
    }
    while (l->n_refused)
        forget_refused(l, l->n_refused - 1);
    return NULL;
}
