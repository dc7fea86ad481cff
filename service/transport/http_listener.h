/*
 * http_listener.h — an HTTP/1.1 server that slow or idle clients cannot
 * take down: requests framed by http1_parser, connections run on a fixed
 * number of threads (each an epoll loop over its connections: a
 * connection costs no thread while it waits), fed by an acceptor thread
 * that
 *
 *   - accepts every connection at once, so the kernel's listen queue never
 *     grows (a client past the limits below is answered 503 and closed);
 *   - holds at most max_connections at a time, and max_per_peer from one
 *     address; at a limit, the connection whose client has left its
 *     answers unread the longest (past the 128 KiB of answers a connection
 *     may leave unsent in the kernel) makes room for the new one, else the
 *     oldest connection still reading a request (its headers, its body, or
 *     idle between two requests; one with bytes not yet read is passed
 *     over: its request is there), so slow clients (a slowloris) and
 *     clients that read nothing only push each other out, and a client
 *     that sends its request at once always gets in;
 *   - gives each request deadlines, not an idle timeout that every byte
 *     restarts: its request line and headers within header_ms of the
 *     connection's start or of the previous answer; its body at
 *     body_min_rate bytes a second on average after a grace of header_ms
 *     (so a body of N bytes has header_ms + N / body_min_rate in all); its
 *     answer taken within header_ms of being ready; and, when lifetime_ms
 *     is set, the whole connection within lifetime_ms of its accept. Past
 *     a deadline the socket is shut down and the connection closed,
 *     unanswered;
 *   - counts the body bytes received, as they arrive, against
 *     max_receive_bytes for all connections together: when a piece does
 *     not fit, the body readers slower than its own (fewest bytes a second
 *     since their body began) are shut, slowest first, to make room, and
 *     when none is slower the request is over_budget (a body announced
 *     huge and trickled holds only what it sent, and loses it to any
 *     faster one).
 *
 * Requests on a connection are served one at a time, in order (a
 * pipelined request waits, unread, for the answer before it). A handler
 * sees a request through callbacks on the connection's thread: begin (the
 * head is in), body (each piece), complete (the body is whole), finished
 * (the request is over). It answers with http_request_answer, once, from
 * any thread: at once, or later (the work done elsewhere), while the
 * connection waits with no deadline and its socket is watched for the
 * client hanging up (hangup). A request answered before its body is whole
 * closes the connection after the answer (the rest of the body is not
 * read). A request the parser refuses is answered by refused, and the
 * connection closed after it. A connection that closes ends its request
 * (finished, sent false) once its answer, if one is awaited, has come.
 */
#ifndef LMSCORED_HTTP_LISTENER_H
#define LMSCORED_HTTP_LISTENER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "http1_parser.h"
#include "lmscore.h"

typedef struct {
    int max_connections;
    int max_per_peer;
    int64_t header_ms;
    int64_t body_min_rate; /* bytes a second, > 0 */
    int64_t lifetime_ms;   /* 0: none */
    /* body bytes received for requests whose body is not whole, all
     * connections together (the receive budget); 0: none */
    int64_t max_receive_bytes;
} http_listener_limits;

/* A request, from begin until finished returns. */
typedef struct {
    const char *method; /* NUL-terminated */
    const char *path;   /* the target up to '?', NUL-terminated (no NUL in it) */
    const char *head;   /* the head's bytes, for http1_field_value(parsed, head, ...) */
    const http1_request *parsed;
} http_request;

/* An answer; the listener copies what it needs before http_request_answer
 * returns. */
typedef struct {
    unsigned status;
    const char *content_type;
    const char *body;
    size_t body_len;
    const char *headers; /* more "Name: value\r\n" lines; NULL: none */
    bool close;          /* the connection closes after it */
    bool head_only;      /* a HEAD request's: Content-Length, no body */
} http_answer;

typedef struct {
    /* The head is in: the handler's state for the request (NULL: out of
     * memory, the connection closes). */
    void *(*begin)(void *cls, http_request *rq);
    void (*body)(void *state, const char *data, size_t n); /* optional */
    void (*complete)(void *state);                         /* optional */
    /* The parser refused the body (e): the handler answers with the
     * refusal (else refused's answer is sent). Optional. */
    void (*failed)(void *state, const http1_error *e);
    /* The receive budget is spent and no slower body reader could be shut
     * for this request's next piece (which is dropped): the handler
     * answers (else the connection closes unanswered). Optional. */
    void (*over_budget)(void *state);
    /* The client hung up while the answer is awaited: it must still come. */
    void (*hangup)(void *state); /* optional */
    /* The request is over: its answer went out whole, or not. */
    void (*finished)(void *state, bool sent); /* optional */
    /* The answer to a request the parser refused; its body and headers
     * may be written to buf[0..cap). */
    void (*refused)(void *cls, const http1_error *e, http_answer *out, char *buf, size_t cap);
} http_handler;

typedef struct {
    const char *address; /* HOST:PORT or [V6]:PORT; port 0 picks one */
    const char *flag;    /* the option address came from, for errors */
    http_listener_limits limits;
    http1_limits parse_limits;
    unsigned threads;               /* connection threads, >= 1 */
    const char *tls_key, *tls_cert; /* PEM text, both NULL for plaintext */
    /* the body of the 503 a connection past the limits gets, and its
     * Content-Type; NULL: "too many connections" as text */
    const char *refusal, *refusal_type;
    http_handler handler;
    void *cls; /* for begin and refused */
} http_listener_options;

typedef struct http_listener http_listener;

/* Binds the address and serves requests until http_listener_stop. */
lms_status http_listener_start(const http_listener_options *opt, http_listener **out,
                               lms_error *err);
int http_listener_port(const http_listener *l);
/* The request's answer (once; any thread). After a hang-up, or once the
 * connection has closed, it may go nowhere. */
void http_request_answer(http_request *rq, const http_answer *a);
/* Stops accepting, lets the answers ready go out (a second at most),
 * closes every connection and frees l; every request awaiting an answer
 * must have been answered by then. NULL is a no-op. */
void http_listener_stop(http_listener *l);

#endif
