/*
 * listen_addr.h — a HOST:PORT flag value (--metrics-listen, --http-listen)
 * as the socket address to bind; "[v6]:port" for IPv6 literals. And a probe
 * of whether an address can be bound, with the cause when not, for the
 * listener whose library does not say (gRPC core), and so that every
 * listen flag's failure is the same record.
 */
#ifndef LMSCORED_LISTEN_ADDR_H
#define LMSCORED_LISTEN_ADDR_H

#include <netdb.h>

#include "lmscore.h"

/* *out is freed with freeaddrinfo. Fails with err naming flag (e.g.
 * "metrics-listen") when listen is not HOST:PORT or does not resolve. */
lms_status listen_addr_resolve(const char *listen, const char *flag, struct addrinfo **out,
                               lms_error *err);

/* The port of an IPv4 or IPv6 socket address, in host order. */
int listen_addr_port(const struct sockaddr *sa);

/* Binds a socket to listen's address (SO_REUSEADDR, as the listeners do)
 * and closes it. *port is the port asked for (-1: listen is no HOST:PORT,
 * or does not resolve: nothing was tried, and LMS_OK). Fails with
 * LMS_ERR_IO, reason bind_failed and the field flag, and *errnum set, when
 * the address cannot be bound (in use, not local, a privileged port). */
lms_status listen_addr_probe(const char *listen, const char *flag, int *port, int *errnum,
                             lms_error *err);

#endif
