/*
 * http_slots.c — the HTTP listener's slot table (see
 * http_listener_internal.h), under the listener's mu: who may be closed for
 * a new connection at the limits (a client leaving its answers unread,
 * else the oldest reader), each phase's deadline, and the receive budget
 * that closes the slowest body readers for faster ones.
 */
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>

#include "clock.h"
#include "http_listener_internal.h"

static bool same_host(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
    if (a->ss_family != b->ss_family) return false;
    if (a->ss_family == AF_INET)
        return memcmp(&((const struct sockaddr_in *)a)->sin_addr,
                      &((const struct sockaddr_in *)b)->sin_addr, sizeof(struct in_addr)) == 0;
    if (a->ss_family == AF_INET6)
        return memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr,
                      &((const struct sockaddr_in6 *)b)->sin6_addr, sizeof(struct in6_addr)) == 0;
    return true;
}

void slot_shut_locked(conn_slot *s)
{
    shutdown(s->fd, SHUT_RDWR);
    s->shut = true;
}

bool slot_reading(const conn_slot *s)
{
    return s->phase == PHASE_HEADERS || s->phase == PHASE_BODY;
}

int64_t slot_deadline(const http_listener *l, const conn_slot *s)
{
    const http_listener_limits *lim = &l->opt.limits;
    int64_t d = INT64_MAX;
    if (s->phase == PHASE_BODY)
        d = s->since_ms + lim->header_ms + s->body_bytes * 1000 / lim->body_min_rate;
    else if (s->phase == PHASE_CLOSING)
        d = s->since_ms + LINGER_MS;
    else if (s->phase != PHASE_WAITING)
        d = s->since_ms + lim->header_ms;
    if (lim->lifetime_ms && s->accepted_ms + lim->lifetime_ms < d)
        d = s->accepted_ms + lim->lifetime_ms;
    return d;
}

/* Bytes the client sent that are not read yet: a request that has
 * arrived and is about to be parsed, not a slow one. */
static bool unread_bytes(const conn_slot *s)
{
    int n = 0;
    return ioctl(s->fd, FIONREAD, &n) == 0 && n > 0;
}

/* Whether s's answer has waited longer for its client than stalled's. */
static bool longer_stalled(const conn_slot *s, const conn_slot *stalled)
{
    return s->phase == PHASE_ANSWERING && s->stalled &&
           (!stalled || s->since_ms < stalled->since_ms);
}

/* A slot for a new connection from peer, or NULL when the limits say no.
 * At a limit, a connection (of that peer, or of all) is shut to make room:
 * first the one whose client has left its answers unread the longest (a
 * client that pipelines requests and reads nothing holds no slot), else
 * the oldest still reading a request: a client that sends its request at
 * once always gets in, and slow ones only push each other out. A reader
 * whose bytes wait to be read is passed over: its request is there, not
 * yet parsed (under a burst of connections, it would be the oldest before
 * its turn). Caller holds mu. */
conn_slot *slots_take_locked(http_listener *l, const struct sockaddr_storage *peer)
{
    conn_slot *free_slot = NULL, *oldest_reading = NULL, *oldest_peer_reading = NULL;
    conn_slot *stalled = NULL, *peer_stalled = NULL;
    int live = 0, from_peer = 0;
    for (int i = 0; i < l->n_slots; i++) {
        conn_slot *s = &l->slots[i];
        if (!s->used) {
            free_slot = free_slot ? free_slot : s;
            continue;
        }
        if (s->shut) continue;
        bool same = same_host(&s->peer, peer);
        live++;
        from_peer += same;
        if (longer_stalled(s, stalled)) stalled = s;
        if (same && longer_stalled(s, peer_stalled)) peer_stalled = s;
        if (!slot_reading(s)) continue;
        bool oldest = !oldest_reading || s->accepted_ms < oldest_reading->accepted_ms;
        bool oldest_of_peer =
            same && (!oldest_peer_reading || s->accepted_ms < oldest_peer_reading->accepted_ms);
        if (!(oldest || oldest_of_peer) || unread_bytes(s)) continue;
        if (oldest) oldest_reading = s;
        if (oldest_of_peer) oldest_peer_reading = s;
    }
    bool peer_full = from_peer >= l->opt.limits.max_per_peer;
    bool all_full = live >= l->opt.limits.max_connections;
    conn_slot *evict = peer_full  ? (peer_stalled ? peer_stalled : oldest_peer_reading)
                       : all_full ? (stalled ? stalled : oldest_reading)
                                  : NULL;
    if (!free_slot || ((peer_full || all_full) && !evict)) return NULL;
    if (evict) slot_shut_locked(evict);
    return free_slot;
}

/* Caller holds mu. */
void slot_return_budget_locked(http_listener *l, conn_slot *s)
{
    l->receiving -= s->body_bytes;
    s->body_bytes = 0;
}

void conn_set_phase(conn *c, conn_phase phase)
{
    http_listener *l = c->w->l;
    pthread_mutex_lock(&l->mu);
    c->slot->phase = phase;
    c->slot->since_ms = monotonic_ms();
    c->slot->stalled = false;
    slot_return_budget_locked(l, c->slot);
    pthread_mutex_unlock(&l->mu);
}

/* Whether a's body arrives slower than b's: fewer bytes a second since
 * each began (a millisecond added, so that one begun now is fast). */
static bool slower(const conn_slot *a, int64_t a_bytes, const conn_slot *b, int64_t b_bytes,
                   int64_t now)
{
    return a_bytes * (now - b->since_ms + 1) < b_bytes * (now - a->since_ms + 1);
}

/* Takes n bytes of the receive budget for c's body. When they do not fit,
 * the body readers slower than c are shut, slowest first, until they do:
 * a client that announces a huge body and trickles it holds only what it
 * sent, and loses that to any faster one. False when c is the slowest
 * left (or is itself shut): the piece has no room. */
bool conn_take_budget(conn *c, size_t n)
{
    http_listener *l = c->w->l;
    const int64_t max = l->opt.limits.max_receive_bytes;
    conn_slot *me = c->slot;
    pthread_mutex_lock(&l->mu);
    bool ok = !me->shut;
    const int64_t now = monotonic_ms(), mine = me->body_bytes + (int64_t)n;
    while (ok && max && l->receiving + (int64_t)n > max) {
        conn_slot *slowest = NULL;
        for (int i = 0; i < l->n_slots; i++) {
            conn_slot *s = &l->slots[i];
            if (!s->used || s->shut || s == me || s->phase != PHASE_BODY || !s->body_bytes)
                continue;
            if (!slower(s, s->body_bytes, me, mine, now)) continue;
            if (!slowest || slower(s, s->body_bytes, slowest, slowest->body_bytes, now))
                slowest = s;
        }
        if (!slowest) {
            ok = false;
            break;
        }
        /* its thread sees the socket end and frees the body */
        slot_return_budget_locked(l, slowest);
        slot_shut_locked(slowest);
    }
    if (ok) {
        me->body_bytes += (int64_t)n;
        l->receiving += (int64_t)n;
    }
    pthread_mutex_unlock(&l->mu);
    return ok;
}

/* The kernel takes no more of c's answer: its client has left
 * ANSWER_QUEUE_BYTES unread, and its slot may be taken first. */
void conn_mark_stalled(conn *c)
{
    http_listener *l = c->w->l;
    pthread_mutex_lock(&l->mu);
    c->slot->stalled = true;
    pthread_mutex_unlock(&l->mu);
}
