/*
 * listen_addr.c — HOST:PORT → a passive socket address (see listen_addr.h).
 */
#include "listen_addr.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

lms_status listen_addr_resolve(const char *listen, const char *flag, struct addrinfo **out,
                               lms_error *err)
{
    char host[256];
    const char *colon = strrchr(listen, ':');
    size_t host_len = colon ? (size_t)(colon - listen) : 0;
    if (!colon || host_len == 0 || host_len >= sizeof host || !colon[1])
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                        "--%s '%s' is not HOST:PORT", flag, listen);
    memcpy(host, listen, host_len);
    host[host_len] = '\0';
    const char *h = host;
    if (host[0] == '[' && host[host_len - 1] == ']') {
        host[host_len - 1] = '\0';
        h = host + 1;
    }
    struct addrinfo hints = {
        .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE};
    int rc = getaddrinfo(h, colon + 1, &hints, out);
    if (rc != 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag, "--%s '%s': %s", flag,
                        listen, gai_strerror(rc));
    return LMS_OK;
}

int listen_addr_port(const struct sockaddr *sa)
{
    return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                           : ((const struct sockaddr_in *)sa)->sin_port);
}

lms_status listen_addr_probe(const char *listen, const char *flag, int *port, int *errnum,
                             lms_error *err)
{
    struct addrinfo *ai = NULL;
    lms_error ignored;
    *port = -1;
    *errnum = 0;
    if (listen_addr_resolve(listen, flag, &ai, &ignored) != LMS_OK) return LMS_OK;
    *port = listen_addr_port(ai->ai_addr);
    int one = 1;
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, ai->ai_addr, ai->ai_addrlen) != 0)
        *errnum = errno;
    if (fd >= 0) close(fd);
    freeaddrinfo(ai);
    if (!*errnum) return LMS_OK;
    return lms_fail(err, LMS_ERR_IO, "bind_failed", flag, "cannot listen on %s (port %d): %s",
                    listen, *port, strerror(*errnum));
}
