/*
 * http_connection.c — the HTTP listener's connection threads (see
 * http_listener_internal.h): each an epoll loop over its connections, and
 * each connection a state machine that reads a request's head and body,
 * hands them to the handler, waits for the answer and sends it.
 */
#include <errno.h>
#include <limits.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_listener_internal.h"

static const char CONTINUE[] = "HTTP/1.1 100 Continue\r\n\r\n";

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
    slot_return_budget_locked(l, c->slot);
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
    conn_set_phase(c, PHASE_ANSWERING);
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
    char *answer = http_answer_format(&a, &head, &len);
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
    conn_set_phase(c, PHASE_WAITING);
    const http_handler *h = &c->w->l->opt.handler;
    if (!request_answered(c->rq) && h->complete) h->complete(c->rq->state);
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
    conn_set_phase(c, body ? PHASE_BODY : PHASE_WAITING);
    rq->state = l->opt.handler.begin(l->opt.cls, &rq->pub);
    if (!rq->state) return STEP_CLOSE;
    if (!body) return body_complete(c);
    c->state = S_BODY;
    if (!request_answered(rq) && rq->parsed.expect_continue && c->in_len == 0) {
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
    if (c->starved || request_answered(c->rq)) return;
    if (!conn_take_budget(c, n)) {
        c->starved = true;
        if (h->over_budget) h->over_budget(c->rq->state);
        return;
    }
    if (h->body) h->body(c->rq->state, data, n);
}

static step step_body(conn *c)
{
    if (request_answered(c->rq)) return send_answer(c);
    if (c->in_len && c->rq->parsed.chunked) {
        size_t used = 0;
        http1_error e;
        http1_result r = http1_chunked_feed(&c->chunks, c->in, c->in_len, &used,
                                            &c->w->l->opt.parse_limits, body_piece, c, &e);
        consume(c, used);
        /* answered as a piece came (the body refused): the connection
         * closes after the answer, even when the body's end came too, as
         * the pieces after the refusal were dropped */
        if (request_answered(c->rq)) return send_answer(c);
        if (c->starved) return STEP_CLOSE;
        if (r == HTTP1_ERROR) {
            /* the handler ends its request with the refusal when it can */
            const http_handler *h = &c->w->l->opt.handler;
            if (h->failed && !request_answered(c->rq)) h->failed(c->rq->state, &e);
            return request_answered(c->rq) ? send_answer(c) : refuse_request(c, &e);
        }
        if (r == HTTP1_DONE) return body_complete(c);
    } else if (c->in_len) {
        size_t n = c->in_len < c->body_left ? c->in_len : (size_t)c->body_left;
        body_piece(c, c->in, n);
        consume(c, n);
        c->body_left -= n;
        if (request_answered(c->rq)) return send_answer(c);
        if (c->starved) return STEP_CLOSE;
        if (!c->body_left) return body_complete(c);
    }
    if (request_answered(c->rq)) return send_answer(c);
    return read_more(c);
}

static step step_wait(conn *c)
{
    if (request_answered(c->rq)) return send_answer(c);
    watch(c, c->hungup ? 0 : EPOLLRDHUP);
    return STEP_WAIT;
}

static step step_send(conn *c)
{
    while (c->out_off < c->out_len) {
        ssize_t n = io_send(c, c->out + c->out_off, c->out_len - c->out_off);
        if (n == IO_AGAIN) {
            if (c->want_write && !c->interim) conn_mark_stalled(c);
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
        conn_set_phase(c, PHASE_CLOSING);
        return STEP_GO;
    }
    c->state = S_HEAD;
    conn_set_phase(c, PHASE_HEADERS);
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

void *http_worker_main(void *arg)
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
