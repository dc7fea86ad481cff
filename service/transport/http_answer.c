/*
 * http_answer.c — the HTTP listener's answers (see
 * http_listener_internal.h): formatted as bytes, and handed over from any
 * thread (the engine's, when a call ends) to the connection's thread,
 * through the request's mutex and the thread's posted list.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_listener_internal.h"

void http_worker_wake(worker *w)
{
    uint64_t one = 1;
    ssize_t n = write(w->ev, &one, sizeof one); /* full: a wake is pending anyway */
    (void)n;
}

static const char *status_text(unsigned status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 415:
        return "Unsupported Media Type";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    default:
        return "Error";
    }
}

char *http_answer_format(const http_answer *a, size_t *head_len, size_t *len)
{
    static const char days[][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    static const char months[][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    const char *extra = a->headers ? a->headers : "";
    const char *type = a->content_type ? a->content_type : "text/plain; charset=utf-8";
    size_t body = a->head_only ? 0 : a->body_len;
    size_t room = 160 + strlen(type) + strlen(extra) + body;
    char *out = malloc(room);
    if (!out) return NULL;
    int n =
        snprintf(out, room,
                 "HTTP/1.1 %u %s\r\nDate: %s, %02d %s %04d %02d:%02d:%02d GMT\r\n"
                 "Content-Type: %s\r\nContent-Length: %zu\r\n%s",
                 a->status, status_text(a->status), days[tm.tm_wday], tm.tm_mday, months[tm.tm_mon],
                 tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec, type, a->body_len, extra);
    if (n < 0 || (size_t)n >= room) {
        free(out);
        return NULL;
    }
    if (body) memcpy(out + n, a->body, body);
    *head_len = (size_t)n;
    *len = (size_t)n + body;
    return out;
}

void http_request_answer(http_request *pub, const http_answer *a)
{
    request *rq = (request *)pub;
    http_answer sent = *a;
    sent.head_only |= strcmp(pub->method, "HEAD") == 0; /* RFC 9110 9.3.2: no content */
    size_t head = 0, len = 0;
    char *answer = http_answer_format(&sent, &head, &len);
    pthread_mutex_lock(&rq->mu);
    if (rq->closed || rq->answered) {
        pthread_mutex_unlock(&rq->mu);
        free(answer);
        return;
    }
    /* out of memory: the connection closes unanswered (no answer) */
    rq->answered = true;
    rq->answer = answer;
    rq->answer_head = head;
    rq->answer_len = len;
    rq->answer_close = a->close || !answer;
    /* queued under rq->mu: the connection cannot close (and leave the
     * list) before it is; from the connection's own thread too (a call
     * ended there may be another connection's), where the answer of the
     * request whose callback runs is also seen when the callback returns */
    worker *w = rq->c->w;
    pthread_mutex_lock(&w->mu);
    if (!rq->c->queued) {
        rq->c->queued = true;
        rq->c->queue_next = w->posted;
        w->posted = rq->c;
    }
    pthread_mutex_unlock(&w->mu);
    http_worker_wake(w);
    pthread_mutex_unlock(&rq->mu);
}

bool request_answered(request *rq)
{
    pthread_mutex_lock(&rq->mu);
    bool done = rq->answered;
    pthread_mutex_unlock(&rq->mu);
    return done;
}
