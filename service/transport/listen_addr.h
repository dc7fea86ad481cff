/*
 * listen_addr.h — a HOST:PORT flag value (--metrics-listen, --http-listen)
 * as the socket address to bind; "[v6]:port" for IPv6 literals.
 */
#ifndef LMSCORED_LISTEN_ADDR_H
#define LMSCORED_LISTEN_ADDR_H

#include <netdb.h>

#include "lmscore.h"

/* *out is freed with freeaddrinfo. Fails with err naming flag (e.g.
 * "metrics-listen") when listen is not HOST:PORT or does not resolve. */
lms_status listen_addr_resolve(const char *listen, const char *flag, struct addrinfo **out,
                               lms_error *err);

#endif
