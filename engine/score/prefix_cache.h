/*
 * prefix_cache.h — the KV of recent query prefixes, kept so that a repeated
 * query (or the next batch of a streamed item list) skips its prefill.
 *
 * LRU, bounded in bytes, keyed by the exact token sequence. Entries are
 * reference-counted: a lookup pins the entry until prefix_cache_release, so
 * eviction never frees KV that a forward pass is reading. Thread-safe.
 */
#ifndef LMS_PREFIX_CACHE_H
#define LMS_PREFIX_CACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kv_prefix.h"

typedef struct prefix_cache prefix_cache;
typedef struct prefix_cache_entry prefix_cache_entry;

prefix_cache *prefix_cache_create(size_t max_bytes); /* NULL on no memory */
void prefix_cache_free(prefix_cache *pc);

/* The pinned entry for exactly these tokens, or NULL; counted as a hit or a
 * miss. */
prefix_cache_entry *prefix_cache_lookup(prefix_cache *pc, const int32_t *tokens, int32_t n);
/* Whether these tokens are cached (marking the entry recently used): a probe
 * that plans work, not counted as a hit or a miss. */
bool prefix_cache_contains(prefix_cache *pc, const int32_t *tokens, int32_t n);
/* Stores kv (ownership passes to the cache) and returns it pinned. When the
 * entry alone exceeds the budget it is not kept: the returned pin is then the
 * only owner and frees kv on release. NULL on no memory (kv is then freed). */
prefix_cache_entry *prefix_cache_insert(prefix_cache *pc, const int32_t *tokens, int32_t n,
                                        kv_prefix *kv);
const kv_prefix *prefix_cache_kv(const prefix_cache_entry *e);
void prefix_cache_release(prefix_cache *pc, prefix_cache_entry *e);

/* Lookups that found an entry (hits) or none (misses), entries evicted to
 * make room, and the bytes the kept entries hold, since creation. */
typedef struct {
    int64_t hits, misses, evictions;
    size_t bytes, max_bytes;
} prefix_cache_stats;

void prefix_cache_stats_get(prefix_cache *pc, prefix_cache_stats *out);

#endif
