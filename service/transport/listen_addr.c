/*
 * listen_addr.c — HOST:PORT → a passive socket address (see listen_addr.h).
 */
#include "listen_addr.h"

#include <string.h>
#include <sys/socket.h>

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
