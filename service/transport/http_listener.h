/*
 * http_listener.h — an HTTP endpoint that slow or idle clients cannot take
 * down: libmicrohttpd parses and answers, fed by an acceptor thread of its
 * own that
 *
 *   - accepts every connection at once, so the kernel's listen queue never
 *     grows (a client past the limits below is answered 503 and closed);
 *   - holds at most max_connections at a time, and max_per_peer from one
 *     address; at a limit, the oldest connection whose request has not
 *     arrived whole makes room for the new one, so slow clients (a
 *     slowloris) only push each other out, and a client that sends its
 *     request at once always gets in;
 *   - gives each connection deadline_ms from accept to close, whatever it
 *     sends (not an idle timeout that every byte restarts): past it the
 *     socket is shut down and libmicrohttpd closes the connection, so none
 *     lingers (CLOSE-WAIT included).
 *
 * Responses should carry "Connection: close": a kept-alive connection
 * would meet its deadline between requests.
 */
#ifndef LMSCORED_HTTP_LISTENER_H
#define LMSCORED_HTTP_LISTENER_H

#include <microhttpd.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct {
    int max_connections;
    int max_per_peer;
    int64_t deadline_ms;
} http_listener_limits;

typedef struct http_listener http_listener;

/* Binds address (HOST:PORT or [V6]:PORT; port 0 picks one) and serves
 * handler(cls, ...) for every request until http_listener_stop. flag names
 * the option address came from, for errors. */
lms_status http_listener_start(const char *address, const char *flag,
                               const http_listener_limits *limits,
                               MHD_AccessHandlerCallback handler, void *cls, http_listener **out,
                               lms_error *err);
int http_listener_port(const http_listener *l);
/* Stops accepting, closes every connection (waits for a request being
 * answered) and frees l; NULL is a no-op. */
void http_listener_stop(http_listener *l);

#endif
