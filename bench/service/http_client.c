/*
 * http_client.c — a minimal blocking HTTP/1.1 client for one keep-alive
 * connection (see http_client.h): answers with a Content-Length only,
 * which is what lmscored sends.
 */
#include "http_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

struct http_client {
    int fd, port;
    char *buf; /* the last answer, NUL-terminated */
    size_t cap;
    const char *body;
};

http_client *http_client_open(int port)
{
    http_client *c = calloc(1, sizeof *c);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (!c || (c->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 ||
        connect(c->fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        fprintf(stderr, "bench_service: cannot connect to 127.0.0.1:%d: %s\n", port,
                strerror(errno));
        if (c && c->fd >= 0) close(c->fd);
        free(c);
        return NULL;
    }
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->port = port;
    return c;
}

static int send_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

/* Reads until at least want bytes are in buf (growing it); -1 on EOF. */
static int fill(http_client *c, size_t *have, size_t want)
{
    while (*have < want) {
        if (want + 1 > c->cap) {
            size_t cap = c->cap ? c->cap : 65536;
            while (cap < want + 1)
                cap *= 2;
            char *grown = realloc(c->buf, cap);
            if (!grown) return -1;
            c->buf = grown;
            c->cap = cap;
        }
        ssize_t k = recv(c->fd, c->buf + *have, c->cap - 1 - *have, 0);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        *have += (size_t)k;
        c->buf[*have] = '\0';
    }
    return 0;
}

int http_client_post(http_client *c, const char *path, const char *body, size_t len)
{
    char head[256];
    int n = snprintf(head, sizeof head,
                     "POST %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     path, c->port, len);
    if (send_all(c->fd, head, (size_t)n) != 0 || send_all(c->fd, body, len) != 0) {
        fprintf(stderr, "bench_service: the HTTP request could not be sent\n");
        return -1;
    }
    size_t have = 0, want = 1;
    char *end = NULL;
    while (!end) {
        if (fill(c, &have, want) != 0) {
            fprintf(stderr, "bench_service: the HTTP connection closed\n");
            return -1;
        }
        end = strstr(c->buf, "\r\n\r\n");
        want = have + 1;
    }
    int status = atoi(c->buf + strlen("HTTP/1.1 "));
    size_t length = 0;
    for (char *line = strstr(c->buf, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n"))
        if (strncasecmp(line + 2, "Content-Length:", 15) == 0)
            length = strtoul(line + 17, NULL, 10);
    size_t body_at = (size_t)(end + 4 - c->buf);
    if (fill(c, &have, body_at + length) != 0) {
        fprintf(stderr, "bench_service: the HTTP answer was cut short\n");
        return -1;
    }
    /* nothing is pipelined: the answer ends the buffer */
    c->body = c->buf + body_at;
    return status;
}

const char *http_client_body(const http_client *c)
{
    return c->body;
}

void http_client_close(http_client *c)
{
    if (!c) return;
    close(c->fd);
    free(c->buf);
    free(c);
}
