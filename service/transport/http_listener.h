/*
 * http_listener.h — an HTTP endpoint that slow or idle clients cannot take
 * down: libmicrohttpd parses and answers on a fixed number of threads
 * (connections cost no thread while they wait), fed by an acceptor thread
 * of our own that
 *
 *   - accepts every connection at once, so the kernel's listen queue never
 *     grows (a client past the limits below is answered 503 and closed);
 *   - holds at most max_connections at a time, and max_per_peer from one
 *     address; at a limit, the oldest connection still reading a request
 *     (its headers, its body, or idle between two requests) makes room for
 *     the new one (one with bytes not yet read is passed over: its request
 *     is there), so slow clients (a slowloris) only push each other out,
 *     and a client that sends its request at once always gets in;
 *   - gives each request deadlines, not an idle timeout that every byte
 *     restarts: its request line and headers within header_ms of the
 *     connection's start or of the previous answer; its body at
 *     body_min_rate bytes a second on average after a grace of header_ms
 *     (so a body of N bytes has header_ms + N / body_min_rate in all); its
 *     answer taken within header_ms of being ready; and, when lifetime_ms
 *     is set, the whole connection within lifetime_ms of its accept. Past
 *     a deadline the socket is shut down and libmicrohttpd closes the
 *     connection, unanswered, so none lingers (CLOSE-WAIT included).
 *
 * A handler that waits for work done elsewhere calls http_listener_wait:
 * the connection is suspended (no thread, no deadline) and the acceptor
 * watches its socket for the client hanging up until libmicrohttpd calls
 * the handler again after MHD_resume_connection.
 */
#ifndef LMSCORED_HTTP_LISTENER_H
#define LMSCORED_HTTP_LISTENER_H

#include <microhttpd.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct {
    int max_connections;
    int max_per_peer;
    int64_t header_ms;
    int64_t body_min_rate; /* bytes a second, > 0 */
    int64_t lifetime_ms;   /* 0: none */
} http_listener_limits;

typedef struct {
    const char *address; /* HOST:PORT or [V6]:PORT; port 0 picks one */
    const char *flag;    /* the option address came from, for errors */
    const char *name;    /* for libmicrohttpd's log lines */
    http_listener_limits limits;
    unsigned threads;               /* libmicrohttpd's threads, >= 1 */
    const char *tls_key, *tls_cert; /* PEM text, both NULL for plaintext */
    /* the body of the 503 a connection past the limits gets, and its
     * Content-Type; NULL: "too many connections" as text */
    const char *refusal, *refusal_type;
    size_t memory_limit; /* of a connection's buffers (its headers); 0: libmicrohttpd's */
    MHD_AccessHandlerCallback handler;
    MHD_RequestCompletedCallback completed; /* optional */
    void *cls;                              /* for both */
} http_listener_options;

typedef struct http_listener http_listener;

/* Binds the address and serves handler for every request until
 * http_listener_stop. */
lms_status http_listener_start(const http_listener_options *opt, http_listener **out,
                               lms_error *err);
int http_listener_port(const http_listener *l);
/* From a handler: suspends conn until MHD_resume_connection(conn); until
 * then on_hangup(arg) is called once (from the acceptor thread) if the
 * client hangs up, and never after libmicrohttpd calls the handler (or the
 * completed callback) for conn again. */
void http_listener_wait(http_listener *l, struct MHD_Connection *conn, void (*on_hangup)(void *),
                        void *arg);
/* Stops accepting, closes every connection (no connection may be suspended
 * by then: each must have been resumed) and frees l; NULL is a no-op. */
void http_listener_stop(http_listener *l);

#endif
