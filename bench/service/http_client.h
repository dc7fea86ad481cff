/*
 * http_client.h — the HTTP side of bench_service: one keep-alive HTTP/1.1
 * connection on loopback, a POST and its whole answer per call, blocking,
 * with nothing between the socket and the timing (no client library).
 */
#ifndef LMSCORE_BENCH_HTTP_CLIENT_H
#define LMSCORE_BENCH_HTTP_CLIENT_H

#include <stddef.h>

typedef struct http_client http_client;

/* Connects to 127.0.0.1:port. NULL (with a message on stderr) on failure. */
http_client *http_client_open(int port);
/* POSTs body (len bytes of JSON) to path and reads the answer; returns its
 * HTTP status (-1 on a transport error, with a message on stderr). The
 * answer's body stays readable with http_client_body until the next call. */
int http_client_post(http_client *c, const char *path, const char *body, size_t len);
const char *http_client_body(const http_client *c);
void http_client_close(http_client *c);

#endif
