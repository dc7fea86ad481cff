/*
 * http_listener_internal.h — what the files of the HTTP/1.1 listener share
 * (http_listener.c starts and stops it, http_acceptor.c accepts and
 * refuses, http_slots.c holds the slot table's limits, deadlines and
 * evictions, http_connection.c runs the connection threads, http_answer.c
 * formats answers and hands them over between threads): its tunables, the
 * connection, its slot and its request.
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
 */
#ifndef LMSCORED_HTTP_LISTENER_INTERNAL_H
#define LMSCORED_HTTP_LISTENER_INTERNAL_H

#include <openssl/ssl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "http_listener.h"

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

/* ---- http_slots.c: the slot table (callers hold l->mu where _locked) ---- */

/* A slot for a new connection from peer, or NULL when the limits say no
 * (a connection is shut for it when one may be). */
conn_slot *slots_take_locked(http_listener *l, const struct sockaddr_storage *peer);
void slot_shut_locked(conn_slot *s);
/* Reading a request (its head, its body, or idle): one that may be closed
 * for a new connection, and on stop. */
bool slot_reading(const conn_slot *s);
int64_t slot_deadline(const http_listener *l, const conn_slot *s);
/* Gives the slot's body bytes back to the receive budget. */
void slot_return_budget_locked(http_listener *l, conn_slot *s);
void conn_set_phase(conn *c, conn_phase phase);
/* n more bytes of c's body in the receive budget; false: no room. */
bool conn_take_budget(conn *c, size_t n);
void conn_mark_stalled(conn *c);

/* ---- http_acceptor.c ---- */

void *http_acceptor_main(void *arg); /* arg: the listener */

/* ---- http_connection.c ---- */

void *http_worker_main(void *arg); /* arg: the worker */

/* ---- http_answer.c ---- */

void http_worker_wake(worker *w);
/* The answer as bytes without its Connection line and blank line: the
 * status line and header fields (*head_len bytes), then the body; NULL
 * when out of memory. */
char *http_answer_format(const http_answer *a, size_t *head_len, size_t *len);
bool request_answered(request *rq);

#endif
