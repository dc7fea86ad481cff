/*
 * http_listener.c — the HTTP/1.1 server behind the HTTP API and /metrics
 * (see http_listener.h): an acceptor thread (connection limits, refusal
 * instead of a listen queue, deadlines) and a few connection threads, each
 * an epoll loop over the connections it was given.
 *
 * Ownership. A connection (conn) belongs to one connection thread, which
 * alone reads, writes and frees it. Its slot in the listener's table,
 * under mu, is what the acceptor sees: the phase of its request (which
 * gives the deadline its sweep enforces, and whether the connection may be
 * closed for a new one) and its socket, which the acceptor shuts down past
 * a deadline or for eviction; the thread then sees the socket end and
 * closes the connection. The slot is released under mu before the socket
 * is closed, so the acceptor never shuts a number that names another
 * socket. The one thing another thread does to a connection is answer its
 * request (http_request_answer, from the engine's threads): the answer is
 * left in the request, under its own mutex, and the connection queued to
 * its thread (an eventfd wakes it); once its connection has closed, a
 * request takes no answer, so a late one is dropped, never queued for a
 * connection that is gone.
 *
 * A connection steps through states: HEAD (reading a request's head, or
 * idle), BODY (its body), WAIT (the answer is awaited: the socket is
 * watched for EPOLLRDHUP only, so a pipelined request is not read and a
 * hang-up is seen), SEND (an answer, or a 100 Continue, going out) and
 * LINGER (after an answer that closes the connection: the write side is
 * shut and what the client still sends is read and dropped until it
 * closes, so that unread bytes do not make the kernel reset the connection
 * before the client has read its answer). A connection refused at accept
 * closes the same way, on the acceptor (refused_conn).
 *
 * TLS is OpenSSL's (tls.c builds the context): the daemon already links
 * it to check the PEM files, its nonblocking SSL_accept/SSL_read/SSL_write
 * report WANT_READ or WANT_WRITE, which map onto the epoll interest, and
 * no new package is needed (GnuTLS would be one more library for the same
 * work).
 */
#include "http_listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "listen_addr.h"
#include "tls.h"

/* How often the acceptor looks for connections past their deadline: the
 * deadlines hold to this. */
#define SWEEP_MS       100
#define LISTEN_BACKLOG 64
/* On stop, how long the answers ready or about to be (their calls have
 * ended) have to go out before every connection closes. */
#define STOP_GRACE_MS 1000
/* How long, and how much, a connection closing after its answer reads of
 * what its client still sends before it closes anyway (a client that
 * goes on sending a body refused is not read for ever). */
#define LINGER_MS    1000
#define LINGER_BYTES (256 << 10)
#define READ_BYTES   (16 << 10)
/* The bytes of answers a connection may leave unsent in the kernel
 * (TCP_NOTSENT_LOWAT): past them a send waits for the client to read. A
 * client that never reads its answers pins this, not the 2-4 MB of an
 * autotuned send buffer, and its connection is seen stalled. */
#define ANSWER_QUEUE_BYTES (128 << 10)
/* Refused connections closing in stages at a time (the acceptor's): past
 * it the one refused first is closed at once. */
#define MAX_REFUSED 64

typedef enum {
    PHASE_HEADERS,   /* reading a request's line and headers, or idle between requests */
    PHASE_BODY,      /* reading its body */
    PHASE_WAITING,   /* its answer is awaited: no deadline */
    PHASE_ANSWERING, /* its answer goes out */
    PHASE_CLOSING,   /* answered, closing: what the client still sends is dropped */
} conn_phase;

typedef struct {
    bool used; /* a connection holds the slot */
    bool shut; /* shut down (deadline or eviction): closing, not counted */
    int fd;
    struct sockaddr_storage peer;
    int64_t accepted_ms;
    conn_phase phase;
    int64_t since_ms;   /* when the phase began */
    int64_t body_bytes; /* PHASE_BODY: received so far, counted in receiving */
    bool stalled;       /* PHASE_ANSWERING: the client leaves ANSWER_QUEUE_BYTES unread */
} conn_slot;

typedef enum { S_HEAD, S_BODY, S_WAIT, S_SEND, S_LINGER } conn_state;

/* A connection refused (503), closing in stages as an answered one does
 * (S_LINGER): its write side shut, what its client still sends read and
 * dropped until the client closes, for LINGER_MS or LINGER_BYTES at most. */
typedef struct {
    int fd;
    int64_t until_ms;
    size_t dropped;
} refused_conn;

typedef struct conn conn;
typedef struct worker worker;

typedef struct {
    http_request pub;
    conn *c;
    void *state;          /* the handler's */
    http1_request parsed; /* pub.parsed */
    char *bytes;          /* the head, then method and path */
    pthread_mutex_t mu;   /* guards what follows */
    bool closed;          /* the connection is gone: an answer goes nowhere */
    bool answered;        /* http_request_answer was called */
    char *answer;         /* status line and header lines, without Connection */
    size_t answer_len;    /* of them, then the body */
    size_t answer_head;   /* bytes of answer before the body */
    bool answer_close;
} request;

struct conn {
    worker *w;
    conn_slot *slot;
    int fd;
    SSL *ssl;
    bool handshaken;
    bool want_write; /* the last I/O that would block needs the socket writable */
    conn_state state;
    char *in;
    size_t in_len, in_cap;
    http1_head_parser hp;
    http1_request head;
    http1_chunked chunks;
    uint64_t body_left; /* of a Content-Length body */
    bool body_done;
    request *rq;
    char *out;
    size_t out_len, out_off;
    bool interim;     /* out is a 100 Continue: the body follows */
    bool close_after; /* out is the connection's last answer */
    bool hungup;
    bool starved;    /* a piece of the body found no room in the receive budget */
    size_t dropped;  /* S_LINGER: bytes read and dropped */
    uint32_t events; /* the epoll interest, when registered */
    bool registered;
    bool queued; /* on its thread's posted list */
    conn *queue_next;
    conn *prev, *next; /* its thread's connections */
};

struct worker {
    http_listener *l;
    pthread_t thread;
    bool started;
    int ep, ev;
    pthread_mutex_t mu; /* guards incoming, posted and stop */
    conn *incoming;
    conn *posted;
    bool stop;
    conn *conns;
};

struct http_listener {
    http_listener_options opt;
    SSL_CTX *tls;
    int listen_fd;
    int wake[2]; /* written to stop the acceptor */
    atomic_bool stopping;
    pthread_t acceptor;
    bool acceptor_started;
    int port;
    pthread_mutex_t mu; /* guards slots and receiving */
    conn_slot *slots;   /* [n_slots]: the connections counted and those closing */
    int n_slots;
    int64_t receiving; /* the slots' body_bytes, together */
    char *refusal;     /* the whole 503 */
    size_t refusal_len;
    refused_conn refused[MAX_REFUSED]; /* the acceptor's, oldest first */
    int n_refused;
    worker *workers;
    unsigned n_workers, next_worker;
    size_t in_max; /* a connection's read buffer: the longest head the limits allow */
};

static const char REFUSAL_TEXT[] = "too many connections\n";
static const char REFUSAL_HEAD[] = "HTTP/1.1 503 Service Unavailable\r\n"
                                   "Connection: close\r\n"
                                   "Content-Type: %s\r\n"
                                   "Retry-After: 1\r\n"
                                   "Content-Length: %zu\r\n"
                                   "\r\n"
                                   "%s";
static const char CONTINUE[] = "HTTP/1.1 100 Continue\r\n\r\n";

/* ---- the acceptor: slots, limits, deadlines ---- */

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

static void shut_locked(conn_slot *s)
{
    shutdown(s->fd, SHUT_RDWR);
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
    else if (s->phase == PHASE_CLOSING)
        d = s->since_ms + LINGER_MS;
    else if (s->phase != PHASE_WAITING)
        d = s->since_ms + lim->header_ms;
    if (lim->lifetime_ms && s->accepted_ms + lim->lifetime_ms < d)
        d = s->accepted_ms + lim->lifetime_ms;
    return d;
}

/* Bytes the client sent that are not read yet: a request that has
 * arrived and is about to be parsed, not a slow one. */
static bool unread_bytes(const conn_slot *s)
{
    int n = 0;
    return ioctl(s->fd, FIONREAD, &n) == 0 && n > 0;
}

/* Whether s's answer has waited longer for its client than stalled's. */
static bool longer_stalled(const conn_slot *s, const conn_slot *stalled)
{
    return s->phase == PHASE_ANSWERING && s->stalled &&
           (!stalled || s->since_ms < stalled->since_ms);
}

/* A slot for a new connection from peer, or NULL when the limits say no.
 * At a limit, a connection (of that peer, or of all) is shut to make room:
 * first the one whose client has left its answers unread the longest (a
 * client that pipelines requests and reads nothing holds no slot), else
 * the oldest still reading a request: a client that sends its request at
 * once always gets in, and slow ones only push each other out. A reader
 * whose bytes wait to be read is passed over: its request is there, not
 * yet parsed (under a burst of connections, it would be the oldest before
 * its turn). Caller holds mu. */
static conn_slot *take_slot_locked(http_listener *l, const struct sockaddr_storage *peer)
{
    conn_slot *free_slot = NULL, *oldest_reading = NULL, *oldest_peer_reading = NULL;
    conn_slot *stalled = NULL, *peer_stalled = NULL;
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
        if (longer_stalled(s, stalled)) stalled = s;
        if (same && longer_stalled(s, peer_stalled)) peer_stalled = s;
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
    conn_slot *evict = peer_full  ? (peer_stalled ? peer_stalled : oldest_peer_reading)
                       : all_full ? (stalled ? stalled : oldest_reading)
                                  : NULL;
    if (!free_slot || ((peer_full || all_full) && !evict)) return NULL;
    if (evict) shut_locked(evict);
    return free_slot;
}

static void wake_worker(worker *w)
{
    uint64_t one = 1;
    ssize_t n = write(w->ev, &one, sizeof one); /* full: a wake is pending anyway */
    (void)n;
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
    conn_slot *s = take_slot_locked(l, peer);
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
    wake_worker(w);
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
        if (s->used && !s->shut && now >= deadline_of(l, s)) shut_locked(s);
    }
    pthread_mutex_unlock(&l->mu);
}

static void *acceptor_main(void *arg)
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

/* ---- a connection's I/O ---- */

enum { IO_AGAIN = -1, IO_FAILED = -2 };

static ssize_t tls_result(conn *c, int r)
{
    if (r > 0) return r;
    int e = SSL_get_error(c->ssl, r);
    if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
        c->want_write = e == SSL_ERROR_WANT_WRITE;
        return IO_AGAIN;
    }
    ERR_clear_error();
    return e == SSL_ERROR_ZERO_RETURN ? 0 : IO_FAILED;
}

static ssize_t io_result(conn *c, ssize_t r, bool writing)
{
    if (r >= 0) return r;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        c->want_write = writing;
        return IO_AGAIN;
    }
    return IO_FAILED;
}

/* > 0 bytes read, 0 the client closed, IO_AGAIN or IO_FAILED. */
static ssize_t io_recv(conn *c, char *buf, size_t n)
{
    if (n > INT_MAX) n = INT_MAX;
    if (c->ssl) return tls_result(c, SSL_read(c->ssl, buf, (int)n));
    return io_result(c, recv(c->fd, buf, n, 0), false);
}

static ssize_t io_send(conn *c, const char *buf, size_t n)
{
    if (n > INT_MAX) n = INT_MAX;
    if (c->ssl) return tls_result(c, SSL_write(c->ssl, buf, (int)n));
    return io_result(c, send(c->fd, buf, n, MSG_NOSIGNAL), true);
}

/* The epoll interest: events, or none (unregistered: a hung-up socket
 * would report EPOLLHUP at every wait). */
static void watch(conn *c, uint32_t events)
{
    if (!events) {
        if (c->registered) epoll_ctl(c->w->ep, EPOLL_CTL_DEL, c->fd, NULL);
        c->registered = false;
        return;
    }
    if (c->registered && c->events == events) return;
    struct epoll_event ev = {.events = events, .data.ptr = c};
    if (epoll_ctl(c->w->ep, c->registered ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, c->fd, &ev) == 0) {
        c->registered = true;
        c->events = events;
    } else {
        /* cannot happen short of memory: the deadline will shut it */
        c->registered = false;
    }
}

/* Caller holds mu. */
static void return_budget_locked(http_listener *l, conn_slot *s)
{
    l->receiving -= s->body_bytes;
    s->body_bytes = 0;
}

static void set_phase(conn *c, conn_phase phase)
{
    http_listener *l = c->w->l;
    pthread_mutex_lock(&l->mu);
    c->slot->phase = phase;
    c->slot->since_ms = monotonic_ms();
    c->slot->stalled = false;
    return_budget_locked(l, c->slot);
    pthread_mutex_unlock(&l->mu);
}

/* Whether a's body arrives slower than b's: fewer bytes a second since
 * each began (a millisecond added, so that one begun now is fast). */
static bool slower(const conn_slot *a, int64_t a_bytes, const conn_slot *b, int64_t b_bytes,
                   int64_t now)
{
    return a_bytes * (now - b->since_ms + 1) < b_bytes * (now - a->since_ms + 1);
}

/* Takes n bytes of the receive budget for c's body. When they do not fit,
 * the body readers slower than c are shut, slowest first, until they do:
 * a client that announces a huge body and trickles it holds only what it
 * sent, and loses that to any faster one. False when c is the slowest
 * left (or is itself shut): the piece has no room. */
static bool take_budget(conn *c, size_t n)
{
    http_listener *l = c->w->l;
    const int64_t max = l->opt.limits.max_receive_bytes;
    conn_slot *me = c->slot;
    pthread_mutex_lock(&l->mu);
    bool ok = !me->shut;
    const int64_t now = monotonic_ms(), mine = me->body_bytes + (int64_t)n;
    while (ok && max && l->receiving + (int64_t)n > max) {
        conn_slot *slowest = NULL;
        for (int i = 0; i < l->n_slots; i++) {
            conn_slot *s = &l->slots[i];
            if (!s->used || s->shut || s == me || s->phase != PHASE_BODY || !s->body_bytes)
                continue;
            if (!slower(s, s->body_bytes, me, mine, now)) continue;
            if (!slowest || slower(s, s->body_bytes, slowest, slowest->body_bytes, now))
                slowest = s;
        }
        if (!slowest) {
            ok = false;
            break;
        }
        /* its thread sees the socket end and frees the body */
        return_budget_locked(l, slowest);
        shut_locked(slowest);
    }
    if (ok) {
        me->body_bytes += (int64_t)n;
        l->receiving += (int64_t)n;
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* ---- answers ---- */

static const char *status_text(unsigned status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

/* The answer as bytes without its Connection line and blank line: the
 * status line and header fields (answer_head bytes), then the body. */
static char *format_answer(const http_answer *a, size_t *head_len, size_t *len)
{
    static const char days[][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    const char *extra = a->headers ? a->headers : "";
    const char *type = a->content_type ? a->content_type : "text/plain; charset=utf-8";
    size_t body = a->head_only ? 0 : a->body_len;
    size_t room = 160 + strlen(type) + strlen(extra) + body;
    char *out = malloc(room);
    if (!out) return NULL;
    int n =
        snprintf(out, room,
                 "HTTP/1.1 %u %s\r\nDate: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n"
                 "Content-Type: %s\r\nContent-Length: %zu\r\n%s",
                 a->status, status_text(a->status), days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, type, a->body_len, extra);
    if (n < 0 || (size_t)n >= room) {
        free(out);
        return NULL;
    }
    if (body) memcpy(out + n, a->body, body);
    *head_len = (size_t)n;
    *len = (size_t)n + body;
    return out;
}

/* Takes the formatted answer into c->out, with its Connection line. */
static bool take_answer(conn *c, char *answer, size_t head, size_t len, bool close)
{
    bool http10_keep = !close && c->rq && c->rq->parsed.minor == 0;
    const char *connection = close         ? "Connection: close\r\n\r\n"
                             : http10_keep ? "Connection: keep-alive\r\n\r\n"
                                           : "\r\n";
    size_t extra = strlen(connection);
    char *out = malloc(len + extra);
    if (!out) return false;
    memcpy(out, answer, head);
    memcpy(out + head, connection, extra);
    memcpy(out + head + extra, answer + head, len - head);
    c->out = out;
    c->out_len = len + extra;
    c->out_off = 0;
    c->close_after = close;
    c->interim = false;
    return true;
}

void http_request_answer(http_request *pub, const http_answer *a)
{
    request *rq = (request *)pub;
    http_answer sent = *a;
    sent.head_only |= strcmp(pub->method, "HEAD") == 0; /* RFC 9110 9.3.2: no content */
    size_t head = 0, len = 0;
    char *answer = format_answer(&sent, &head, &len);
    pthread_mutex_lock(&rq->mu);
    if (rq->closed || rq->answered) {
        pthread_mutex_unlock(&rq->mu);
        free(answer);
        return;
    }
    /* out of memory: the connection closes unanswered (no answer) */
    rq->answered = true;
    rq->answer = answer;
    rq->answer_head = head;
    rq->answer_len = len;
    rq->answer_close = a->close || !answer;
    /* queued under rq->mu: the connection cannot close (and leave the
     * list) before it is; from the connection's own thread too (a call
     * ended there may be another connection's), where the answer of the
     * request whose callback runs is also seen when the callback returns */
    worker *w = rq->c->w;
    pthread_mutex_lock(&w->mu);
    if (!rq->c->queued) {
        rq->c->queued = true;
        rq->c->queue_next = w->posted;
        w->posted = rq->c;
    }
    pthread_mutex_unlock(&w->mu);
    wake_worker(w);
    pthread_mutex_unlock(&rq->mu);
}

static bool answered(request *rq)
{
    pthread_mutex_lock(&rq->mu);
    bool done = rq->answered;
    pthread_mutex_unlock(&rq->mu);
    return done;
}

/* ---- requests ---- */

/* The request is over: no answer is taken after this. */
static void end_request(conn *c, bool sent)
{
    request *rq = c->rq;
    if (!rq) return;
    c->rq = NULL;
    pthread_mutex_lock(&rq->mu);
    rq->closed = true;
    pthread_mutex_unlock(&rq->mu);
    const http_handler *h = &c->w->l->opt.handler;
    if (rq->state && h->finished) h->finished(rq->state, sent);
    pthread_mutex_destroy(&rq->mu);
    free(rq->answer);
    free(rq->bytes);
    free(rq);
}

static void conn_close(conn *c)
{
    worker *w = c->w;
    http_listener *l = w->l;
    end_request(c, false);
    watch(c, 0);
    pthread_mutex_lock(&l->mu);
    return_budget_locked(l, c->slot);
    c->slot->used = false;
    pthread_mutex_unlock(&l->mu);
    SSL_free(c->ssl);
    close(c->fd);
    pthread_mutex_lock(&w->mu);
    if (c->queued)
        for (conn **p = &w->posted; *p; p = &(*p)->queue_next)
            if (*p == c) {
                *p = c->queue_next;
                break;
            }
    pthread_mutex_unlock(&w->mu);
    if (c->prev)
        c->prev->next = c->next;
    else
        w->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    free(c->in);
    free(c->out);
    free(c);
}

typedef enum { STEP_GO, STEP_WAIT, STEP_CLOSE } step;

static void consume(conn *c, size_t n)
{
    memmove(c->in, c->in + n, c->in_len - n);
    c->in_len -= n;
}

/* Reads what has come into c->in. */
static step read_more(conn *c)
{
    if (c->in_cap - c->in_len < 1024 && c->in_cap < c->w->l->in_max) {
        size_t cap = c->in_cap ? 2 * c->in_cap : 4096;
        if (cap > c->w->l->in_max) cap = c->w->l->in_max;
        char *grown = realloc(c->in, cap);
        if (!grown) return STEP_CLOSE;
        c->in = grown;
        c->in_cap = cap;
    }
    if (c->in_len == c->in_cap) return STEP_CLOSE; /* the parser's limits come first */
    size_t room = c->in_cap - c->in_len;
    ssize_t n = io_recv(c, c->in + c->in_len, room < READ_BYTES ? room : READ_BYTES);
    if (n > 0) {
        c->in_len += (size_t)n;
        return STEP_GO;
    }
    if (n == IO_AGAIN) {
        watch(c, c->want_write ? EPOLLOUT : EPOLLIN);
        return STEP_WAIT;
    }
    return STEP_CLOSE;
}

static step start_send(conn *c, char *answer, size_t head, size_t len, bool close)
{
    if (!answer || !take_answer(c, answer, head, len, close)) return STEP_CLOSE;
    c->state = S_SEND;
    set_phase(c, PHASE_ANSWERING);
    return STEP_GO;
}

/* The request's answer is in: it goes out; the connection closes after it
 * when the answer says so, the client did, the body was not read whole or
 * the listener is stopping. */
static step send_answer(conn *c)
{
    request *rq = c->rq;
    pthread_mutex_lock(&rq->mu);
    char *answer = rq->answer;
    bool close = rq->answer_close || !rq->parsed.keep_alive || !c->body_done ||
                 atomic_load(&c->w->l->stopping);
    rq->answer = NULL;
    pthread_mutex_unlock(&rq->mu);
    step s = start_send(c, answer, rq->answer_head, rq->answer_len, close);
    free(answer);
    return s;
}

/* A request the parser refused: answered by the handler's refused, and
 * the connection closed after it. A request under way (its body refused)
 * ends without an answer of its own. */
static step refuse_request(conn *c, const http1_error *e)
{
    end_request(c, false);
    http_answer a = {0};
    char buf[2048];
    c->w->l->opt.handler.refused(c->w->l->opt.cls, e, &a, buf, sizeof buf);
    size_t head = 0, len = 0;
    char *answer = format_answer(&a, &head, &len);
    c->in_len = 0;
    step s = start_send(c, answer, head, len, true);
    free(answer);
    return s;
}

static step body_complete(conn *c)
{
    c->body_done = true;
    /* waiting before the work starts: a connection whose work runs is
     * never taken for a reader and closed for a new one */
    c->state = S_WAIT;
    set_phase(c, PHASE_WAITING);
    const http_handler *h = &c->w->l->opt.handler;
    if (!answered(c->rq) && h->complete) h->complete(c->rq->state);
    return STEP_GO;
}

static step start_request(conn *c)
{
    http_listener *l = c->w->l;
    http1_request *h = &c->head;
    request *rq = calloc(1, sizeof *rq);
    size_t head_len = h->head_len;
    char *bytes = rq ? malloc(head_len + h->method.len + h->path.len + 2) : NULL;
    if (!bytes) {
        free(rq);
        return STEP_CLOSE;
    }
    memcpy(bytes, c->in, head_len);
    char *method = bytes + head_len, *path = method + h->method.len + 1;
    memcpy(method, c->in + h->method.off, h->method.len);
    method[h->method.len] = '\0';
    memcpy(path, c->in + h->path.off, h->path.len);
    path[h->path.len] = '\0';
    rq->parsed = *h;
    rq->bytes = bytes;
    rq->c = c;
    rq->pub = (http_request){.method = method, .path = path, .head = bytes, .parsed = &rq->parsed};
    pthread_mutex_init(&rq->mu, NULL);
    consume(c, head_len);
    http1_head_init(&c->hp, &c->head);
    c->rq = rq;
    c->hungup = false;
    c->starved = false;
    bool body = rq->parsed.chunked || rq->parsed.content_length > 0;
    c->body_left = rq->parsed.content_length;
    c->body_done = !body;
    http1_chunked_init(&c->chunks);
    set_phase(c, body ? PHASE_BODY : PHASE_WAITING);
    rq->state = l->opt.handler.begin(l->opt.cls, &rq->pub);
    if (!rq->state) return STEP_CLOSE;
    if (!body) return body_complete(c);
    c->state = S_BODY;
    if (!answered(rq) && rq->parsed.expect_continue && c->in_len == 0) {
        /* the client waits for this before it sends the body */
        c->out = malloc(sizeof CONTINUE - 1);
        if (!c->out) return STEP_CLOSE;
        memcpy(c->out, CONTINUE, sizeof CONTINUE - 1);
        c->out_len = sizeof CONTINUE - 1;
        c->out_off = 0;
        c->interim = true;
        c->state = S_SEND;
    }
    return STEP_GO;
}

static step step_head(conn *c)
{
    if (c->in_len) {
        http1_error e;
        http1_result r =
            http1_head_feed(&c->hp, &c->head, c->in, c->in_len, &c->w->l->opt.parse_limits, &e);
        if (r == HTTP1_DONE) return start_request(c);
        if (r == HTTP1_ERROR) return refuse_request(c, &e);
    }
    return read_more(c);
}

static void body_piece(void *ctx, const char *data, size_t n)
{
    conn *c = ctx;
    const http_handler *h = &c->w->l->opt.handler;
    if (c->starved || answered(c->rq)) return;
    if (!take_budget(c, n)) {
        c->starved = true;
        if (h->over_budget) h->over_budget(c->rq->state);
        return;
    }
    if (h->body) h->body(c->rq->state, data, n);
}

static step step_body(conn *c)
{
    if (answered(c->rq)) return send_answer(c);
    if (c->in_len && c->rq->parsed.chunked) {
        size_t used = 0;
        http1_error e;
        http1_result r = http1_chunked_feed(&c->chunks, c->in, c->in_len, &used,
                                            &c->w->l->opt.parse_limits, body_piece, c, &e);
        consume(c, used);
        /* answered as a piece came (the body refused): the connection
         * closes after the answer, even when the body's end came too, as
         * the pieces after the refusal were dropped */
        if (answered(c->rq)) return send_answer(c);
        if (c->starved) return STEP_CLOSE;
        if (r == HTTP1_ERROR) {
            /* the handler ends its request with the refusal when it can */
            const http_handler *h = &c->w->l->opt.handler;
            if (h->failed && !answered(c->rq)) h->failed(c->rq->state, &e);
            return answered(c->rq) ? send_answer(c) : refuse_request(c, &e);
        }
        if (r == HTTP1_DONE) return body_complete(c);
    } else if (c->in_len) {
        size_t n = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
        body_piece(c, c->in, n);
        consume(c, n);
        c->body_left -= n;
        if (answered(c->rq)) return send_answer(c);
        if (c->starved) return STEP_CLOSE;
        if (!c->body_left) return body_complete(c);
    }
    if (answered(c->rq)) return send_answer(c);
    return read_more(c);
}

static step step_wait(conn *c)
{
    if (answered(c->rq)) return send_answer(c);
    watch(c, c->hungup ? 0 : EPOLLRDHUP);
    return STEP_WAIT;
}

/* The kernel takes no more of c's answer: its client has left
 * ANSWER_QUEUE_BYTES unread, and its slot may be taken first. */
static void mark_stalled(conn *c)
{
    http_listener *l = c->w->l;
    pthread_mutex_lock(&l->mu);
    c->slot->stalled = true;
    pthread_mutex_unlock(&l->mu);
}

static step step_send(conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = io_send(c, c->out + c->out_off, c->out_len - c->out_off);
        if (n == IO_AGAIN) {
            if (c->want_write && !c->interim) mark_stalled(c);
            watch(c, c->want_write ? EPOLLOUT : EPOLLIN);
            return STEP_WAIT;
        }
        if (n <= 0) return STEP_CLOSE;
        c->out_off += (size_t)n;
    }
    free(c->out);
    c->out = NULL;
    if (c->interim) {
        c->interim = false;
        c->state = S_BODY;
        return STEP_GO;
    }
    end_request(c, true);
    if (c->close_after) {
        if (c->ssl) SSL_shutdown(c->ssl); /* close_notify, best effort */
        ERR_clear_error();
        shutdown(c->fd, SHUT_WR);
        c->state = S_LINGER;
        set_phase(c, PHASE_CLOSING);
        return STEP_GO;
    }
    c->state = S_HEAD;
    set_phase(c, PHASE_HEADERS);
    return STEP_GO;
}

static step step_linger(conn *c)
{
    /* raw bytes, TLS records included: nothing of them is read */
    char drop[4096];
    for (;;) {
        ssize_t n = recv(c->fd, drop, sizeof drop, 0);
        if (n > 0 && (c->dropped += (size_t)n) <= LINGER_BYTES) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
            watch(c, EPOLLIN);
            return STEP_WAIT;
        }
        return STEP_CLOSE;
    }
}

/* Moves the connection on as far as it goes without waiting. */
static void conn_run(conn *c)
{
    for (;;) {
        if (c->ssl && !c->handshaken) {
            ssize_t r = tls_result(c, SSL_accept(c->ssl));
            if (r == IO_AGAIN) {
                watch(c, c->want_write ? EPOLLOUT : EPOLLIN);
                return;
            }
            if (r <= 0) {
                conn_close(c);
                return;
            }
            c->handshaken = true;
        }
        step s = STEP_CLOSE;
        switch (c->state) {
        case S_HEAD:
            s = step_head(c);
            break;
        case S_BODY:
            s = step_body(c);
            break;
        case S_WAIT:
            s = step_wait(c);
            break;
        case S_SEND:
            s = step_send(c);
            break;
        case S_LINGER:
            s = step_linger(c);
            break;
        }
        if (s == STEP_WAIT) return;
        if (s == STEP_CLOSE) {
            conn_close(c);
            return;
        }
    }
}

static void conn_event(conn *c, uint32_t events)
{
    if (c->state == S_WAIT && !c->hungup && (events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        /* the client went away (or half-closed) while its answer is
         * awaited: the handler stops the work; the answer still comes */
        c->hungup = true;
        watch(c, 0);
        const http_handler *h = &c->w->l->opt.handler;
        if (h->hangup) h->hangup(c->rq->state);
    }
    conn_run(c);
}

/* The connections given to w, and those whose answer came. */
static void take_queues(worker *w)
{
    uint64_t n;
    ssize_t r = read(w->ev, &n, sizeof n);
    (void)r;
    pthread_mutex_lock(&w->mu);
    conn *incoming = w->incoming;
    w->incoming = NULL;
    pthread_mutex_unlock(&w->mu);
    while (incoming) {
        conn *c = incoming;
        incoming = c->queue_next;
        c->next = w->conns;
        if (w->conns) w->conns->prev = c;
        w->conns = c;
        conn_run(c);
    }
    /* a connection run here may close another of the list (which takes
     * it off): each is taken off under w->mu as it is run */
    pthread_mutex_lock(&w->mu);
    while (w->posted) {
        conn *c = w->posted;
        w->posted = c->queue_next;
        c->queued = false;
        pthread_mutex_unlock(&w->mu);
        conn_run(c);
        pthread_mutex_lock(&w->mu);
    }
    pthread_mutex_unlock(&w->mu);
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    struct epoll_event evs[64];
    for (;;) {
        int n = epoll_wait(w->ep, evs, 64, -1);
        bool woken = false;
        for (int i = 0; i < n; i++) {
            if (evs[i].data.ptr)
                conn_event(evs[i].data.ptr, evs[i].events);
            else
                woken = true;
        }
        if (!woken) continue;
        take_queues(w);
        pthread_mutex_lock(&w->mu);
        bool stop = w->stop;
        pthread_mutex_unlock(&w->mu);
        if (stop) break;
    }
    while (w->conns)
        conn_close(w->conns);
    return NULL;
}

/* ---- start and stop ---- */

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
        if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
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
    for (unsigned i = 0; l->workers && i < l->n_workers; i++) {
        worker *w = &l->workers[i];
        if (w->started) {
            pthread_mutex_lock(&w->mu);
            w->stop = true;
            pthread_mutex_unlock(&w->mu);
            wake_worker(w);
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
