/*
 * http_listener.c — libmicrohttpd behind an acceptor of our own (see
 * http_listener.h): connection limits, refusal instead of a listen queue,
 * deadlines, and the watch on suspended connections.
 *
 * Each connection's slot follows its request through phases (headers,
 * body, waiting, answering), moved along by wrappers of the handler and
 * the completed callback, which run on libmicrohttpd's threads; the phase
 * gives the deadline the acceptor's sweep enforces and whether the
 * connection may be closed for a new one. A waiting (suspended)
 * connection's socket is in the acceptor's poll set for its client's
 * hang-up; on_hangup runs on the acceptor outside mu, marked firing, so
 * that the handler's next call (which ends the watch) waits for it.
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
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "listen_addr.h"
#include "mhd_log.h"

/* How often the acceptor looks for connections past their deadline: the
 * deadlines hold to this. */
#define SWEEP_MS       100
#define LISTEN_BACKLOG 64
/* On stop, how long the answers ready or about to be (their calls have
 * ended) have to go out before every connection closes. */
#define STOP_GRACE_MS 1000

/* Where a connection's request stands: what its deadline is, whether it
 * may be pushed out. */
typedef enum {
    PHASE_HEADERS,   /* reading a request's line and headers, or idle between requests */
    PHASE_BODY,      /* reading its body */
    PHASE_WAITING,   /* suspended while its work runs elsewhere: no deadline */
    PHASE_ANSWERING, /* the handler has the whole request: its answer goes out */
} conn_phase;

typedef struct {
    bool used;  /* a connection holds the slot */
    bool bound; /* libmicrohttpd started the connection and points at the slot */
    bool shut;  /* shut down (deadline or eviction): closing, not counted */
    int fd;     /* the socket as handed to libmicrohttpd */
    int dup_fd; /* ours: the same socket until libmicrohttpd closes the connection */
    ino_t ino;  /* the socket's inode: what fd must name while libmicrohttpd holds it */
    struct sockaddr_storage peer;
    int64_t accepted_ms;
    conn_phase phase;
    int64_t since_ms;   /* when the phase began */
    int64_t body_bytes; /* PHASE_BODY: received so far */
    /* PHASE_WAITING: called once when the client hangs up */
    void (*on_hangup)(void *);
    void *hangup_arg;
    bool firing; /* on_hangup is running (the acceptor, outside mu) */
} conn_slot;

struct http_listener {
    struct MHD_Daemon *daemon;
    http_listener_options opt;
    int listen_fd;
    int wake[2]; /* written to stop the acceptor, or to have it watch a new socket */
    atomic_bool stopping;
    pthread_t acceptor;
    bool acceptor_started;
    int port;
    pthread_mutex_t mu;   /* guards slots */
    pthread_cond_t fired; /* a slot's on_hangup returned */
    conn_slot *slots;     /* [n_slots]: the connections counted and those closing */
    int n_slots;
    char *refusal; /* the whole 503 */
    size_t refusal_len;
    struct pollfd *polled;  /* [2 + n_slots]: the acceptor's */
    conn_slot **polled_for; /* [n_slots]: the slot of polled[2 + i] */
};

static const char REFUSAL_TEXT[] = "too many connections\n";
static const char REFUSAL_HEAD[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Connection: close\r\n"
                                   "Content-Type: %s\r\n"
                                   "Retry-After: 1\r\n"
                                   "Content-Length: %zu\r\n"
                                   "\r\n"
                                   "%s";

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

static void refuse(const http_listener *l, int fd)
{
    /* best effort: the answer fits any socket buffer, and a peer that is
     * gone gets nothing; a TLS client sees the connection close */
    ssize_t sent =
        l->opt.tls_cert ? 0 : send(fd, l->refusal, l->refusal_len, MSG_NOSIGNAL | MSG_DONTWAIT);
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

static bool reading(const conn_slot *s)
{
    return s->phase == PHASE_HEADERS || s->phase == PHASE_BODY;
}

static int64_t deadline_of(const http_listener *l, const conn_slot *s)
{
    const http_listener_limits *lim = &l->opt.limits;
    int64_t d = INT64_MAX;
    if (s->phase == PHASE_BODY)
        d = s->since_ms + lim->header_ms + s->body_bytes * 1000 / lim->body_min_rate;
    else if (s->phase != PHASE_WAITING)
        d = s->since_ms + lim->header_ms;
    if (lim->lifetime_ms && s->accepted_ms + lim->lifetime_ms < d)
        d = s->accepted_ms + lim->lifetime_ms;
    return d;
}

/* Bytes the client sent that libmicrohttpd has not read yet: a request
 * that has arrived and is about to be parsed, not a slow one. */
static bool unread_bytes(const conn_slot *s)
{
    int n = 0;
    return ioctl(s->dup_fd, FIONREAD, &n) == 0 && n > 0;
}

/* A slot for a new connection from peer, or NULL when the limits say no.
 * At a limit, the oldest connection (of that peer, or of all) still reading
 * a request is shut to make room: a client that sends its request at once
 * always gets in, and slow ones only push each other out. One whose bytes
 * wait to be read is passed over: its request is there, not yet parsed
 * (under a burst of connections, it would be the oldest before its turn).
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
        if (!reading(s)) continue;
        bool oldest = !oldest_reading || s->accepted_ms < oldest_reading->accepted_ms;
        bool oldest_of_peer =
            same && (!oldest_peer_reading || s->accepted_ms < oldest_peer_reading->accepted_ms);
        if (!(oldest || oldest_of_peer) || unread_bytes(s)) continue;
        if (oldest) oldest_reading = s;
        if (oldest_of_peer) oldest_peer_reading = s;
    }
    bool peer_full = from_peer >= l->opt.limits.max_per_peer;
    bool all_full = live >= l->opt.limits.max_connections;
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
        refuse(l, fd);
        return;
    }
    int64_t now = monotonic_ms();
    *s = (conn_slot){.used = true,
                     .fd = fd,
                     .dup_fd = dup_fd,
                     .ino = ino,
                     .peer = *peer,
                     .accepted_ms = now,
                     .phase = PHASE_HEADERS,
                     .since_ms = now};
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
        else if (!s->shut && now >= deadline_of(l, s))
            shut_locked(s);
    }
    pthread_mutex_unlock(&l->mu);
}

/* The poll set: the listening socket, the wake pipe, and the sockets of
 * the waiting connections, for their clients hanging up. */
static nfds_t poll_set(http_listener *l)
{
    nfds_t n = 2;
    l->polled[0] = (struct pollfd){.fd = l->listen_fd, .events = POLLIN};
    l->polled[1] = (struct pollfd){.fd = l->wake[0], .events = POLLIN};
    pthread_mutex_lock(&l->mu);
    for (int i = 0; i < l->n_slots; i++) {
        conn_slot *s = &l->slots[i];
        if (!s->used || !s->on_hangup) continue;
        l->polled_for[n - 2] = s;
        l->polled[n++] = (struct pollfd){.fd = s->dup_fd, .events = POLLRDHUP};
    }
    pthread_mutex_unlock(&l->mu);
    return n;
}

/* Calls on_hangup for the waiting connections whose client hung up. The
 * call runs outside mu (it may end the call, and so resume the connection)
 * and the slot is marked firing meanwhile: unwatch waits for it. */
static void notify_hangups(http_listener *l, nfds_t n)
{
    for (nfds_t i = 2; i < n; i++) {
        if (!(l->polled[i].revents & (POLLRDHUP | POLLHUP | POLLERR))) continue;
        conn_slot *s = l->polled_for[i - 2];
        pthread_mutex_lock(&l->mu);
        void (*fn)(void *) = s->used && s->dup_fd == l->polled[i].fd ? s->on_hangup : NULL;
        void *arg = s->hangup_arg;
        s->on_hangup = NULL;
        s->firing = fn != NULL;
        pthread_mutex_unlock(&l->mu);
        if (!fn) continue;
        fn(arg);
        pthread_mutex_lock(&l->mu);
        s->firing = false;
        pthread_cond_broadcast(&l->fired);
        pthread_mutex_unlock(&l->mu);
    }
}

static void *acceptor_main(void *arg)
{
    http_listener *l = arg;
    while (!atomic_load(&l->stopping)) {
        nfds_t n = poll_set(l);
        if (poll(l->polled, n, SWEEP_MS) > 0) {
            if (l->polled[1].revents) {
                char drained[64];
                while (read(l->wake[0], drained, sizeof drained) > 0) {
                }
            }
            if (l->polled[0].revents & POLLIN) accept_pending(l);
            notify_hangups(l, n);
        }
        sweep(l);
    }
    return NULL;
}

static conn_slot *slot_of(struct MHD_Connection *conn)
{
    const union MHD_ConnectionInfo *ci =
        MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

/* Caller holds mu. Once this returns, the slot's on_hangup is not running
 * and will not be called. */
static void unwatch_locked(http_listener *l, conn_slot *s)
{
    while (s->firing)
        pthread_cond_wait(&l->fired, &l->mu);
    s->on_hangup = NULL;
}

static void enter_locked(conn_slot *s, conn_phase phase)
{
    s->phase = phase;
    s->since_ms = monotonic_ms();
    s->body_bytes = 0;
}

void http_listener_wait(http_listener *l, struct MHD_Connection *conn, void (*on_hangup)(void *),
                        void *arg)
{
    MHD_suspend_connection(conn);
    conn_slot *s = slot_of(conn);
    if (!s) return;
    pthread_mutex_lock(&l->mu);
    enter_locked(s, PHASE_WAITING);
    s->on_hangup = on_hangup;
    s->hangup_arg = arg;
    pthread_mutex_unlock(&l->mu);
    ssize_t w = write(l->wake[1], "w", 1); /* full: a wake is pending anyway */
    (void)w;
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
        conn_slot *s = *socket_context;
        unwatch_locked(l, s);
        release_locked(s);
        *socket_context = NULL;
    }
    pthread_mutex_unlock(&l->mu);
}

/* Whether the request has a body to read: its framing says so. */
static bool has_body(struct MHD_Connection *conn)
{
    const char *length =
        MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    return MHD_lookup_connection_value(conn, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING) ||
           (length && strcmp(length, "0") != 0);
}

/* Moves the connection's phase along (the first call of a request has its
 * headers, later ones its body, an empty one its end; a call after a wait
 * follows the resumption), then hands the request to the handler. */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **req_cls)
{
    http_listener *l = cls;
    conn_slot *s = slot_of(conn);
    if (s) {
        bool body = s->phase == PHASE_HEADERS && has_body(conn);
        pthread_mutex_lock(&l->mu);
        if (s->phase == PHASE_HEADERS)
            enter_locked(s, body ? PHASE_BODY : PHASE_ANSWERING);
        else if (s->phase == PHASE_BODY && *upload_data_size)
            s->body_bytes += (int64_t)*upload_data_size;
        else if (s->phase != PHASE_ANSWERING) {
            unwatch_locked(l, s);
            enter_locked(s, PHASE_ANSWERING);
        }
        pthread_mutex_unlock(&l->mu);
    }
    return l->opt.handler(l->opt.cls, conn, url, method, version, upload_data, upload_data_size,
                          req_cls);
}

/* The request is over: the next one's headers are awaited. */
static void on_completed(void *cls, struct MHD_Connection *conn, void **req_cls,
                         enum MHD_RequestTerminationCode toe)
{
    http_listener *l = cls;
    conn_slot *s = slot_of(conn);
    if (s) {
        pthread_mutex_lock(&l->mu);
        unwatch_locked(l, s);
        enter_locked(s, PHASE_HEADERS);
        pthread_mutex_unlock(&l->mu);
    }
    if (l->opt.completed) l->opt.completed(l->opt.cls, conn, req_cls, toe);
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

static lms_status start_daemon(http_listener *l, lms_error *err)
{
    const http_listener_options *opt = &l->opt;
    bool tls = opt->tls_cert != NULL;
    /* libmicrohttpd's own connection limit sits well above ours, so that it
     * does not refuse silently while it still counts connections it has
     * closed and not yet cleaned up; it has no idle timeout: the deadlines
     * are ours */
    struct MHD_OptionItem items[10] = {
        {MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, (void *)opt->name},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, l},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, l},
        {MHD_OPTION_CONNECTION_LIMIT, 4 * l->n_slots, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, 0, NULL}};
    size_t n = 5;
    if (opt->memory_limit)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_CONNECTION_MEMORY_LIMIT,
                                             (intptr_t)opt->memory_limit, NULL};
    if (opt->threads > 1)
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_THREAD_POOL_SIZE, opt->threads, NULL};
    if (tls) {
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_KEY, 0, (void *)opt->tls_key};
        items[n++] = (struct MHD_OptionItem){MHD_OPTION_HTTPS_MEM_CERT, 0, (void *)opt->tls_cert};
    }
    items[n] = (struct MHD_OptionItem){MHD_OPTION_END, 0, NULL};
    l->daemon = MHD_start_daemon(
        MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ITC |
            MHD_ALLOW_SUSPEND_RESUME | (tls ? MHD_USE_TLS : 0),
        0, NULL, NULL, on_request, l, MHD_OPTION_ARRAY, items, MHD_OPTION_END);
    if (!l->daemon)
        return lms_fail(err, LMS_ERR_IO, NULL, opt->flag, "cannot start the HTTP server on %s",
                        opt->address);
    return LMS_OK;
}

lms_status http_listener_start(const http_listener_options *opt, http_listener **out,
                               lms_error *err)
{
    /* room for as many connections closing as counted */
    int n_slots = 2 * opt->limits.max_connections;
    http_listener *l = calloc(1, sizeof *l);
    conn_slot *slots = calloc((size_t)n_slots, sizeof *slots);
    struct pollfd *polled = calloc((size_t)n_slots + 2, sizeof *polled);
    conn_slot **polled_for = calloc((size_t)n_slots, sizeof *polled_for);
    if (!l || !slots || !polled || !polled_for) {
        free(l);
        free(slots);
        free(polled);
        free(polled_for);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    l->opt = *opt;
    l->slots = slots;
    l->n_slots = n_slots;
    l->polled = polled;
    l->polled_for = polled_for;
    l->listen_fd = l->wake[0] = l->wake[1] = -1;
    atomic_init(&l->stopping, false);
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->fired, NULL);
    const char *body = opt->refusal ? opt->refusal : REFUSAL_TEXT;
    const char *type = opt->refusal ? opt->refusal_type : "text/plain; charset=utf-8";
    size_t len = strlen(body), room = sizeof REFUSAL_HEAD + strlen(type) + 24 + len;
    lms_status st = LMS_OK;
    if (!(l->refusal = malloc(room)))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    else
        l->refusal_len = (size_t)snprintf(l->refusal, room, REFUSAL_HEAD, type, len, body);
    if (st == LMS_OK) st = open_socket(opt->address, opt->flag, l, err);
    if (st == LMS_OK && pipe2(l->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        st = lms_fail(err, LMS_ERR_IO, NULL, opt->flag, "pipe: %s", strerror(errno));
    if (st == LMS_OK) st = start_daemon(l, err);
    if (st == LMS_OK && pthread_create(&l->acceptor, NULL, acceptor_main, l) != 0)
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
            if (reading(s))
                shut_locked(s);
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
    if (l->daemon) MHD_stop_daemon(l->daemon); /* closes its connections: notified */
    for (int i = 0; i < l->n_slots; i++)
        if (l->slots[i].used) close(l->slots[i].dup_fd);
    if (l->listen_fd >= 0) close(l->listen_fd);
    if (l->wake[0] >= 0) close(l->wake[0]);
    if (l->wake[1] >= 0) close(l->wake[1]);
    pthread_cond_destroy(&l->fired);
    pthread_mutex_destroy(&l->mu);
    free(l->refusal);
    free(l->polled);
    free(l->polled_for);
    free(l->slots);
    free(l);
}
