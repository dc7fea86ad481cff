/*
 * raw_floor.c — the floor server of bench_service (see raw_floor.h).
 *
 * Wire format, both ways in host byte order (one machine): a call is a
 * uint32 length and the request bytes; an answer is the server's engine
 * time as a double (ms), a uint32 length and the packed ScoreResponse.
 */
#include "raw_floor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "clock.h"
#include "lmscore/v1/score.pb-c.h"

struct raw_floor {
    int fd;
    pid_t pid;
    uint8_t *reply;
    size_t reply_cap;
};

static int read_full(int fd, void *buf, size_t n)
{
    for (size_t got = 0; got < n;) {
        ssize_t k = read(fd, (char *)buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t n)
{
    for (size_t put = 0; put < n;) {
        ssize_t k = write(fd, (const char *)buf + put, n - put);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        put += (size_t)k;
    }
    return 0;
}

/* The answer the daemon gives for res (scores only, as the benchmark asks):
 * length and engine time first, then the packed response. NULL when out of
 * memory. */
static uint8_t *pack_answer(const lms_score_result *res, const lms_score_request *req,
                            double engine_ms, size_t *len)
{
    size_t n = (size_t)res->n_items;
    Lmscore__V1__ItemScores *items = calloc(n ? n : 1, sizeof *items);
    Lmscore__V1__ItemScores **ptrs = calloc(n ? n : 1, sizeof *ptrs);
    uint8_t *out = NULL;
    if (items && ptrs) {
        for (size_t i = 0; i < n; i++) {
            lmscore__v1__item_scores__init(&items[i]);
            items[i].n_scores = (size_t)res->n_labels;
            items[i].scores = res->scores + i * (size_t)res->n_labels;
            ptrs[i] = &items[i];
        }
        Lmscore__V1__ScoreResponse resp = LMSCORE__V1__SCORE_RESPONSE__INIT;
        resp.n_items = n;
        resp.items = ptrs;
        resp.n_label_token_ids = (size_t)req->n_labels;
        resp.label_token_ids = (int32_t *)req->label_ids;
        size_t body = lmscore__v1__score_response__get_packed_size(&resp);
        uint32_t body32 = (uint32_t)body;
        out = malloc(sizeof engine_ms + sizeof body32 + body);
        if (out) {
            memcpy(out, &engine_ms, sizeof engine_ms);
            memcpy(out + sizeof engine_ms, &body32, sizeof body32);
            lmscore__v1__score_response__pack(&resp, out + sizeof engine_ms + sizeof body32);
            *len = sizeof engine_ms + sizeof body32 + body;
        }
    }
    free(items);
    free(ptrs);
    return out;
}

/* The child: one connection, one call at a time, until the parent closes. */
static int serve(int listen_fd, const char *model, const lms_score_request *req)
{
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    lms_engine *e;
    lms_error err = {0};
    if (lms_engine_open(model, &opt, &e, &err) != LMS_OK) {
        fprintf(stderr, "raw floor: %s\n", err.msg);
        return 1;
    }
    int fd = accept(listen_fd, NULL, NULL);
    int one = 1;
    if (fd < 0 || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        perror("raw floor: accept");
        lms_engine_close(e);
        return 1;
    }
    int rc = 0;
    uint8_t *payload = NULL;
    for (;;) {
        uint32_t len;
        if (read_full(fd, &len, sizeof len) != 0) break; /* the parent is done */
        uint8_t *grown = realloc(payload, len ? len : 1);
        if (!grown || read_full(fd, grown, len) != 0) {
            if (grown) payload = grown;
            rc = 1;
            break;
        }
        payload = grown;
        lms_score_result res;
        memset(&res, 0, sizeof res);
        double t0 = monotonic_seconds();
        lms_status st = lms_engine_score(e, req, NULL, &res, &err);
        double engine_ms = (monotonic_seconds() - t0) * 1e3;
        size_t answer_len = 0;
        uint8_t *answer = st == LMS_OK ? pack_answer(&res, req, engine_ms, &answer_len) : NULL;
        lms_score_result_free(&res);
        if (!answer || write_full(fd, answer, answer_len) != 0) {
            fprintf(stderr, "raw floor: %s\n", st == LMS_OK ? "cannot answer" : err.msg);
            free(answer);
            rc = 1;
            break;
        }
        free(answer);
    }
    free(payload);
    close(fd);
    lms_engine_close(e);
    return rc;
}

int raw_floor_start(const char *model, const lms_score_request *req, raw_floor **out)
{
    raw_floor *f = calloc(1, sizeof *f);
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof addr;
    if (!f || lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(lfd, 1) != 0 || getsockname(lfd, (struct sockaddr *)&addr, &alen) != 0) {
        perror("raw floor: listen");
        if (lfd >= 0) close(lfd);
        free(f);
        return -1;
    }
    fflush(NULL); /* the child must not write the parent's buffered output again */
    f->pid = fork();
    if (f->pid == 0) _exit(serve(lfd, model, req));
    close(lfd);
    if (f->pid < 0) {
        perror("raw floor: fork");
        free(f);
        return -1;
    }
    f->fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    if (f->fd < 0 || connect(f->fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        setsockopt(f->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) {
        perror("raw floor: connect");
        raw_floor_stop(f);
        return -1;
    }
    *out = f;
    return 0;
}

int raw_floor_call(raw_floor *f, const uint8_t *payload, size_t len, double *engine_ms)
{
    uint32_t len32 = (uint32_t)len, body;
    if (write_full(f->fd, &len32, sizeof len32) != 0 || write_full(f->fd, payload, len) != 0 ||
        read_full(f->fd, engine_ms, sizeof *engine_ms) != 0 ||
        read_full(f->fd, &body, sizeof body) != 0) {
        fprintf(stderr, "raw floor: the server went away\n");
        return -1;
    }
    if (body > f->reply_cap) {
        uint8_t *grown = realloc(f->reply, body);
        if (!grown) {
            fprintf(stderr, "raw floor: out of memory\n");
            return -1;
        }
        f->reply = grown;
        f->reply_cap = body;
    }
    if (read_full(f->fd, f->reply, body) != 0) {
        fprintf(stderr, "raw floor: the server went away\n");
        return -1;
    }
    return 0;
}

void raw_floor_stop(raw_floor *f)
{
    if (f->fd >= 0) close(f->fd);
    if (f->pid > 0) waitpid(f->pid, NULL, 0);
    free(f->reply);
    free(f);
}
