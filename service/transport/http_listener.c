/*
 * http_listener.c — libmicrohttpd behind an acceptor of our own (see
 * http_listener.h): connection limits, refusal instead of a listen queue,
 * a deadline per connection.
 *
 * The acceptor keeps a dup of every socket it hands to libmicrohttpd: the
 * deadline shuts the socket down through that dup, which stays open (and so
 * names the same socket) until libmicrohttpd reports the connection closed.
 * Sockets are told apart by inode, not descriptor number: libmicrohttpd
 * closes a connection it cannot take (its own limit, which counts closed
 * connections until its thread cleans them up; no memory) without a word,
 * and the number is then reused. The sweep finds those by the inode the
 * number names now and releases their slots, so that no dup keeps a socket
 * the peer closed open (CLOSE-WAIT) and no slot is held for ever.
 */
#include "http_listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "listen_addr.h"
#include "mhd_log.h"

/* How often the acceptor looks for connections past their deadline: the
 * deadline holds to this. */
#define SWEEP_MS       100
#define LISTEN_BACKLOG 64

typedef struct {
    bool used;      /* a connection holds the slot */
    bool bound;     /* libmicrohttpd started the connection and points at the slot */
    bool requested; /* its request has arrived whole */
    bool shut;      /* shut down (deadline or eviction): closing, not counted */
    int fd;         /* the socket as handed to libmicrohttpd */
    int dup_fd;     /* ours: the same socket until libmicrohttpd closes the connection */
    ino_t ino;      /* the socket's inode: what fd must name while libmicrohttpd holds it */
    struct sockaddr_storage peer;
    int64_t accepted_ms, deadline_ms;
} conn_slot;

struct http_listener {
    struct MHD_Daemon *daemon;
    http_listener_limits limits;
    int listen_fd;
    int wake[2]; /* written once to stop the acceptor */
    pthread_t acceptor;
    bool acceptor_started;
    int port;
    MHD_AccessHandlerCallback handler;
    void *handler_cls;
    pthread_mutex_t mu; /* guards slots */
    conn_slot *slots;   /* [n_slots]: the connections counted and those closing */
    int n_slots;
};

static const char REFUSAL[] = "HTTP/1.1 503 Service Unavailable\r\n"
                              "Connection: close\r\n"
                              "Content-Type: text/plain; charset=utf-8\r\n"
                              "Retry-After: 1\r\n"
                              "Content-Length: 21\r\n"
                              "\r\n"
                              "too many connections\n";

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return true;
}

static void refuse(int fd)
{
    /* best effort: the answer fits any socket buffer, and a peer that is
     * gone gets nothing */
    ssize_t sent = send(fd, REFUSAL, sizeof REFUSAL - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
    (void)sent;
    close(fd);
}

/* The inode of the socket fd names, 0 when fd names none. */
static ino_t socket_inode(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode) ? st.st_ino : 0;
}

static void release_locked(conn_slot *s)
{
    close(s->dup_fd);
    s->used = false;
}

static void shut_locked(conn_slot *s)
{
    shutdown(s->dup_fd, SHUT_RDWR);
    s->shut = true;
}

static conn_slot *older(conn_slot *a, conn_slot *b)
{
    return !a || b->accepted_ms < a->accepted_ms ? b : a;
}

/* A slot for a new connection from peer, or NULL when the limits say no.
 * At a limit, the oldest connection (of that peer, or of all) whose request
 * has not arrived whole is shut to make room: a client that sends its
 * request at once always gets in, and slow ones only push each other out.
 * Caller holds mu. */
static conn_slot *take_slot_locked(http_listener *l, const struct sockaddr_storage *peer)
{
    conn_slot *free_slot = NULL, *oldest_reading = NULL, *oldest_peer_reading = NULL;
    int live = 0, from_peer = 0;
    for (int i = 0; i < l->n_slots; i++) {
        conn_slot *s = &l->slots[i];
        if (!s->used) {
            free_slot = free_slot ? free_slot : s;
            continue;
        }
        if (s->shut) continue;
        bool same = same_host(&s->peer, peer);
        live++;
        from_peer += same;
        if (s->requested) continue;
        oldest_reading = older(oldest_reading, s);
        if (same) oldest_peer_reading = older(oldest_peer_reading, s);
    }
    bool peer_full = from_peer >= l->limits.max_per_peer;
    bool all_full = live >= l->limits.max_connections;
    conn_slot *evict = peer_full ? oldest_peer_reading : all_full ? oldest_reading : NULL;
    if (!free_slot || ((peer_full || all_full) && !evict)) return NULL;
    if (evict) shut_locked(evict);
    return free_slot;
}

static void admit(http_listener *l, int fd, const struct sockaddr_storage *peer, socklen_t len)
{
    pthread_mutex_lock(&l->mu);
    conn_slot *s = take_slot_locked(l, peer);
    int dup_fd = s ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
    ino_t ino = dup_fd >= 0 ? socket_inode(dup_fd) : 0;
    if (dup_fd < 0 || !ino) {
        if (dup_fd >= 0) close(dup_fd);
        pthread_mutex_unlock(&l->mu);
        refuse(fd);
        return;
    }
    int64_t now = monotonic_ms();
    *s = (conn_slot){.used = true,
                     .fd = fd,
                     .dup_fd = dup_fd,
                     .ino = ino,
                     .peer = *peer,
                     .accepted_ms = now,
                     .deadline_ms = now + l->limits.deadline_ms};
    pthread_mutex_unlock(&l->mu);
    if (MHD_add_connection(l->daemon, fd, (const struct sockaddr *)peer, len) == MHD_YES) return;
    /* libmicrohttpd closed fd; a connection it started is released by its
     * close notification */
    pthread_mutex_lock(&l->mu);
    if (!s->bound) release_locked(s);
    pthread_mutex_unlock(&l->mu);
}

static void accept_pending(http_listener *l)
{
    for (;;) {
        struct sockaddr_storage peer;
        socklen_t len = sizeof peer;
        int fd =
            accept4(l->listen_fd, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            admit(l, fd, &peer, len);
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

/* Shuts connections past their deadline, and releases the slots of those
 * libmicrohttpd closed before it started them (no notification comes for
 * those: their descriptor no longer names the socket). */
static void sweep(http_listener *l)
{
    int64_t now = monotonic_ms();
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n_slots; i++) {
        conn_slot *s = &l->slots[i];
        if (!s->used) continue;
        if (!s->bound && socket_inode(s->fd) != s->ino)
            release_locked(s);
        else if (!s->shut && now >= s->deadline_ms)
            shut_locked(s);
    }
    pthread_mutex_unlock(&l->mu);
}

static void *acceptor_main(void *arg)
{
    http_listener *l = arg;
    for (;;) {
        struct pollfd fds[2] = {{.fd = l->listen_fd, .events = POLLIN},
                                {.fd = l->wake[0], .events = POLLIN}};
        int n = poll(fds, 2, SWEEP_MS);
        if (n > 0 && fds[1].revents) return NULL;
        if (n > 0 && (fds[0].revents & POLLIN)) accept_pending(l);
        sweep(l);
    }
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode code)
{
    http_listener *l = cls;
    pthread_mutex_lock(&l->mu);
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(conn, MHD_CONNECTION_INFO_CONNECTION_FD);
        ino_t ino = ci ? socket_inode(ci->connect_fd) : 0;
        for (int i = 0; ino && i < l->n_slots; i++) {
            conn_slot *s = &l->slots[i];
            if (s->used && !s->bound && s->ino == ino) {
                s->bound = true;
                *socket_context = s;
                break;
            }
        }
    } else if (*socket_context) {
        release_locked(*socket_context);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&l->mu);
}

/* Marks the connection's request as arrived, then hands it to the handler. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    http_listener *l = cls;
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    if (ci && ci->socket_context) {
        pthread_mutex_lock(&l->mu);
        ((conn_slot *)ci->socket_context)->requested = true;
        pthread_mutex_unlock(&l->mu);
    }
    return l->handler(l->handler_cls, conn, url, method, version, upload_data, upload_data_size,
                      req_cls);
}

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
        st = lms_fail(err, LMS_ERR_IO, NULL, flag, "cannot listen on %s: %s", address,
                      strerror(errno));
    freeaddrinfo(ai);
    if (st != LMS_OK) return st;
    struct sockaddr_storage bound;
    socklen_t len = sizeof bound;
    if (getsockname(l->listen_fd, (struct sockaddr *)&bound, &len) == 0)
        l->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                                    : ((struct sockaddr_in *)&bound)->sin_port);
    return LMS_OK;
}

lms_status http_listener_start(const char *address, const char *flag,
                               const http_listener_limits *limits,
                               MHD_AccessHandlerCallback handler, void *cls, http_listener **out,
                               lms_error *err)
{
    /* room for as many connections closing as counted */
    int n_slots = 2 * limits->max_connections;
    http_listener *l = calloc(1, sizeof *l);
    conn_slot *slots = calloc((size_t)n_slots, sizeof *slots);
    if (!l || !slots) {
        free(l);
        free(slots);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    l->limits = *limits;
    l->slots = slots;
    l->n_slots = n_slots;
    l->handler = handler;
    l->handler_cls = cls;
    l->listen_fd = l->wake[0] = l->wake[1] = -1;
    pthread_mutex_init(&l->mu, NULL);
    lms_status st = open_socket(address, flag, l, err);
    if (st == LMS_OK && pipe2(l->wake, O_CLOEXEC) != 0)
        st = lms_fail(err, LMS_ERR_IO, NULL, flag, "pipe: %s", strerror(errno));
    if (st == LMS_OK) {
        /* libmicrohttpd's own limits sit well above ours, so that it does
         * not refuse silently while it still counts connections it has
         * closed and not yet cleaned up; its idle timeout is a backstop for
         * the deadline */
        unsigned idle_s = (unsigned)((limits->deadline_ms + 999) / 1000);
        l->daemon = MHD_start_daemon(
            MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET |
                MHD_USE_ITC,
            0, NULL, NULL, on_request, l, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, "HTTP server",
            MHD_OPTION_NOTIFY_CONNECTION, on_connection, l, MHD_OPTION_CONNECTION_LIMIT,
            4 * (unsigned)n_slots, MHD_OPTION_CONNECTION_TIMEOUT, idle_s, MHD_OPTION_END);
        if (!l->daemon)
            st = lms_fail(err, LMS_ERR_IO, NULL, flag, "cannot start the HTTP server on %s",
                          address);
    }
    if (st == LMS_OK && pthread_create(&l->acceptor, NULL, acceptor_main, l) != 0)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, flag, "cannot start the HTTP acceptor thread");
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

void http_listener_stop(http_listener *l)
{
    if (!l) return;
    if (l->acceptor_started) {
        ssize_t w = write(l->wake[1], "x", 1);
        (void)w;
        pthread_join(l->acceptor, NULL);
    }
    if (l->daemon) MHD_stop_daemon(l->daemon); /* closes its connections: notified */
    for (int i = 0; i < l->n_slots; i++)
        if (l->slots[i].used) close(l->slots[i].dup_fd);
    if (l->listen_fd >= 0) close(l->listen_fd);
    if (l->wake[0] >= 0) close(l->wake[0]);
    if (l->wake[1] >= 0) close(l->wake[1]);
    pthread_mutex_destroy(&l->mu);
    free(l->slots);
    free(l);
}
