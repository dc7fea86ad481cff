/*
 * prefix_cache.c — LRU of query KV (see prefix_cache.h).
 *
 * A doubly linked list in recency order; lookups compare the token sequence
 * after a 64-bit hash. The number of entries is small (the byte budget holds
 * tens of queries), so a list scan is cheaper than a hash table's upkeep.
 */
#include "prefix_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct prefix_cache_entry {
    prefix_cache_entry *prev, *next;
    uint64_t hash;
    int32_t n_tokens;
    int32_t *tokens;
    kv_prefix *kv;
    size_t bytes;
    int pins;
    int in_cache;
};

struct prefix_cache {
    pthread_mutex_t lock;
    prefix_cache_entry *head, *tail; /* head = most recent */
    size_t max_bytes, bytes;
    int64_t hits, misses, evictions;
};

static uint64_t hash_tokens(const int32_t *t, int32_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (int32_t i = 0; i < n; i++) {
        h ^= (uint32_t)t[i];
        h *= 1099511628211ull;
    }
    return h;
}

prefix_cache *prefix_cache_create(size_t max_bytes)
{
    prefix_cache *pc = calloc(1, sizeof *pc);
    if (!pc) return NULL;
    pthread_mutex_init(&pc->lock, NULL);
    pc->max_bytes = max_bytes;
    return pc;
}

static void entry_free(prefix_cache_entry *e)
{
    kv_prefix_free(e->kv);
    free(e->tokens);
    free(e);
}

static void unlink_entry(prefix_cache *pc, prefix_cache_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        pc->head = e->next;
    if (e->next)
        e->next->prev = e->prev;
    else
        pc->tail = e->prev;
    e->prev = e->next = NULL;
}

static void push_front(prefix_cache *pc, prefix_cache_entry *e)
{
    e->next = pc->head;
    e->prev = NULL;
    if (pc->head) pc->head->prev = e;
    pc->head = e;
    if (!pc->tail) pc->tail = e;
}

/* Drops least-recent entries until `need` more bytes fit; pinned entries
 * leave the list now and are freed by their last release. */
static void evict_for(prefix_cache *pc, size_t need)
{
    while (pc->tail && pc->bytes + need > pc->max_bytes) {
        prefix_cache_entry *e = pc->tail;
        unlink_entry(pc, e);
        pc->bytes -= e->bytes;
        pc->evictions++;
        e->in_cache = 0;
        if (e->pins == 0) entry_free(e);
    }
}

void prefix_cache_free(prefix_cache *pc)
{
    if (!pc) return;
    pc->max_bytes = 0;
    evict_for(pc, 1);
    pthread_mutex_destroy(&pc->lock);
    free(pc);
}

/* The entry for these tokens, moved to the front; caller holds the lock. */
static prefix_cache_entry *find_locked(prefix_cache *pc, const int32_t *tokens, int32_t n)
{
    uint64_t h = hash_tokens(tokens, n);
    prefix_cache_entry *e = pc->head;
    while (e && !(e->hash == h && e->n_tokens == n &&
                  memcmp(e->tokens, tokens, (size_t)n * sizeof *tokens) == 0))
        e = e->next;
    if (e) {
        unlink_entry(pc, e);
        push_front(pc, e);
    }
    return e;
}

prefix_cache_entry *prefix_cache_lookup(prefix_cache *pc, const int32_t *tokens, int32_t n)
{
    pthread_mutex_lock(&pc->lock);
    prefix_cache_entry *e = find_locked(pc, tokens, n);
    if (e) {
        e->pins++;
        pc->hits++;
    } else {
        pc->misses++;
    }
    pthread_mutex_unlock(&pc->lock);
    return e;
}

bool prefix_cache_contains(prefix_cache *pc, const int32_t *tokens, int32_t n)
{
    pthread_mutex_lock(&pc->lock);
    bool found = find_locked(pc, tokens, n) != NULL;
    pthread_mutex_unlock(&pc->lock);
    return found;
}

prefix_cache_entry *prefix_cache_insert(prefix_cache *pc, const int32_t *tokens, int32_t n,
                                        kv_prefix *kv)
{
    prefix_cache_entry *e = calloc(1, sizeof *e);
    int32_t *copy = malloc((size_t)(n ? n : 1) * sizeof *copy);
    if (!e || !copy) {
        free(e);
        free(copy);
        kv_prefix_free(kv);
        return NULL;
    }
    memcpy(copy, tokens, (size_t)n * sizeof *copy);
    e->hash = hash_tokens(tokens, n);
    e->n_tokens = n;
    e->tokens = copy;
    e->kv = kv;
    e->bytes = kv_prefix_bytes(kv);
    e->pins = 1;
    pthread_mutex_lock(&pc->lock);
    if (e->bytes <= pc->max_bytes) {
        evict_for(pc, e->bytes);
        push_front(pc, e);
        pc->bytes += e->bytes;
        e->in_cache = 1;
    }
    pthread_mutex_unlock(&pc->lock);
    return e;
}

const kv_prefix *prefix_cache_kv(const prefix_cache_entry *e)
{
    return e->kv;
}

void prefix_cache_release(prefix_cache *pc, prefix_cache_entry *e)
{
    if (!e) return;
    pthread_mutex_lock(&pc->lock);
    int last = --e->pins == 0 && !e->in_cache;
    pthread_mutex_unlock(&pc->lock);
    if (last) entry_free(e);
}

void prefix_cache_stats_get(prefix_cache *pc, prefix_cache_stats *out)
{
    pthread_mutex_lock(&pc->lock);
    *out = (prefix_cache_stats){.hits = pc->hits,
                                .misses = pc->misses,
                                .evictions = pc->evictions,
                                .bytes = pc->bytes,
                                .max_bytes = pc->max_bytes};
    pthread_mutex_unlock(&pc->lock);
}
