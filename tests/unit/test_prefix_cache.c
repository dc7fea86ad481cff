/*
 * test_prefix_cache.c — the prefix KV cache (prefix_cache.c): hits only on
 * the exact token sequence, least-recently-used eviction within the byte
 * budget, entries larger than the budget handed out but not kept, pinned
 * entries alive until their last release, the counters, and concurrent use.
 *
 * An entry's bytes are kv_prefix_bytes: with one layer, kv_dim 1 and
 * d_model 1, a capacity of c rows costs (2c + 1) × 4 bytes. ASan and LSan
 * check what the counts cannot: no use after free, nothing leaked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdint.h>

#include "prefix_cache.h"

static size_t entry_bytes(int32_t rows)
{
    return (2 * (size_t)rows + 1) * sizeof(float);
}

/* A kv_prefix of `rows` rows whose first key holds `mark`. */
static kv_prefix *marked_kv(int32_t rows, float mark)
{
    kv_prefix *kv = NULL;
    lms_error err = {0};
    assert_int_equal(kv_prefix_create(1, 1, 1, rows, false, &kv, &err), LMS_OK);
    assert_int_equal(kv_prefix_bytes(kv), entry_bytes(rows));
    ((float *)kv->k)[0] = mark;
    kv->len = rows;
    return kv;
}

/* Inserts the one-token sequence {key} with `rows` rows marked key, and
 * releases the pin. */
static void insert_key(prefix_cache *pc, int32_t key, int32_t rows)
{
    prefix_cache_entry *e = prefix_cache_insert(pc, &key, 1, marked_kv(rows, (float)key));
    assert_non_null(e);
    prefix_cache_release(pc, e);
}

/* Is {key} cached? Looking it up makes it the most recent entry. */
static int cached(prefix_cache *pc, int32_t key)
{
    prefix_cache_entry *e = prefix_cache_lookup(pc, &key, 1);
    if (!e) return 0;
    assert_true(((const float *)prefix_cache_kv(e)->k)[0] == (float)key);
    prefix_cache_release(pc, e);
    return 1;
}

static void test_hits_only_the_exact_sequence(void **state)
{
    (void)state;
    prefix_cache *pc = prefix_cache_create(1 << 20);
    assert_non_null(pc);
    const int32_t abc[] = {1, 2, 3}, abcd[] = {1, 2, 3, 4}, abd[] = {1, 2, 4}, cba[] = {3, 2, 1};
    assert_null(prefix_cache_lookup(pc, abc, 3)); /* a miss on the empty cache */
    kv_prefix *kv = marked_kv(4, 7);
    prefix_cache_entry *e = prefix_cache_insert(pc, abc, 3, kv);
    assert_non_null(e);
    assert_ptr_equal(prefix_cache_kv(e), kv);
    prefix_cache_release(pc, e);

    prefix_cache_entry *hit = prefix_cache_lookup(pc, abc, 3);
    assert_non_null(hit);
    assert_ptr_equal(prefix_cache_kv(hit), kv);
    prefix_cache_release(pc, hit);
    assert_null(prefix_cache_lookup(pc, abc, 2));  /* a prefix of it */
    assert_null(prefix_cache_lookup(pc, abcd, 4)); /* an extension */
    assert_null(prefix_cache_lookup(pc, abd, 3));  /* same length, other token */
    assert_null(prefix_cache_lookup(pc, cba, 3));  /* same tokens, other order */
    prefix_cache_release(pc, NULL);                /* releasing a miss is a no-op */
    prefix_cache_free(pc);
}

/* Sequences whose 64-bit hashes collide (found by search for the cache's
 * FNV-1a over the tokens as uint32): the same length, and a sequence with
 * the hash of its own prefix. Each must find its own entry only. */
static void test_colliding_hashes_stay_apart(void **state)
{
    (void)state;
    static const int32_t pairs[2][2][3] = {
        {{1216333538, 914403338, 100}, {389895062, 866856999, 264477127}},
        {{1088303, 116, 419412384}, {1088303, 116}},
    };
    static const int32_t lens[2][2] = {{3, 3}, {3, 2}};
    for (int p = 0; p < 2; p++) {
        prefix_cache *pc = prefix_cache_create(1 << 20);
        assert_non_null(pc);
        const int32_t *first = pairs[p][0], *second = pairs[p][1];
        prefix_cache_release(pc, prefix_cache_insert(pc, first, lens[p][0], marked_kv(2, 1)));
        assert_null(prefix_cache_lookup(pc, second, lens[p][1]));
        prefix_cache_release(pc, prefix_cache_insert(pc, second, lens[p][1], marked_kv(2, 2)));
        for (int k = 0; k < 2; k++) {
            prefix_cache_entry *e = prefix_cache_lookup(pc, pairs[p][k], lens[p][k]);
            assert_non_null(e);
            assert_true(((const float *)prefix_cache_kv(e)->k)[0] == (float)(k + 1));
            prefix_cache_release(pc, e);
        }
        prefix_cache_free(pc);
    }
}

/* Three equal entries fill the budget; a fourth evicts the least recently
 * used, where a lookup counts as a use. */
static void test_evicts_least_recently_used(void **state)
{
    (void)state;
    prefix_cache *pc = prefix_cache_create(3 * entry_bytes(4));
    assert_non_null(pc);
    insert_key(pc, 1, 4);
    insert_key(pc, 2, 4);
    insert_key(pc, 3, 4);
    assert_true(cached(pc, 1)); /* recency now 1, 3, 2 */
    insert_key(pc, 4, 4);       /* evicts 2 */
    assert_false(cached(pc, 2));
    assert_true(cached(pc, 3)); /* recency 3, 4, 1 */
    assert_true(cached(pc, 4)); /* recency 4, 3, 1 */
    insert_key(pc, 5, 4);       /* evicts 1 */
    assert_false(cached(pc, 1));
    const int32_t three = 3;
    assert_true(prefix_cache_contains(pc, &three, 1)); /* recency 3, 5, 4 */
    insert_key(pc, 6, 4);                              /* evicts 4 */
    assert_false(cached(pc, 4));
    assert_true(cached(pc, 3));
    assert_true(cached(pc, 5));
    assert_true(cached(pc, 6));
    prefix_cache_free(pc);
}

/* Entries of different sizes: an insert evicts as many old entries as it
 * needs to fit and no more; an entry the size of the whole budget evicts
 * everything. */
static void test_keeps_within_the_byte_budget(void **state)
{
    (void)state;
    const size_t budget = entry_bytes(1) + entry_bytes(2) + entry_bytes(4) + entry_bytes(4) - 4;
    prefix_cache *pc = prefix_cache_create(budget);
    assert_non_null(pc);
    insert_key(pc, 1, 1);
    insert_key(pc, 2, 2);
    insert_key(pc, 3, 4);
    insert_key(pc, 4, 4); /* 4 bytes over: evicts 1 only */
    assert_false(cached(pc, 1));
    assert_true(cached(pc, 2));
    assert_true(cached(pc, 3));
    assert_true(cached(pc, 4));

    prefix_cache *exact = prefix_cache_create(entry_bytes(10));
    assert_non_null(exact);
    insert_key(exact, 1, 2);
    insert_key(exact, 2, 3);
    insert_key(exact, 3, 10); /* exactly the budget: kept, alone */
    assert_false(cached(exact, 1));
    assert_false(cached(exact, 2));
    assert_true(cached(exact, 3));
    prefix_cache_free(exact);
    prefix_cache_free(pc);
}

/* An entry larger than the budget is usable while pinned but never cached,
 * and does not evict anything; with a zero budget nothing is cached. */
static void test_oversize_entry_is_not_kept(void **state)
{
    (void)state;
    prefix_cache *pc = prefix_cache_create(2 * entry_bytes(4));
    assert_non_null(pc);
    insert_key(pc, 1, 4);
    insert_key(pc, 2, 4);
    const int32_t big = 9;
    prefix_cache_entry *e = prefix_cache_insert(pc, &big, 1, marked_kv(16, 9));
    assert_non_null(e);
    assert_true(((const float *)prefix_cache_kv(e)->k)[0] == 9.0f);
    assert_false(cached(pc, big));
    assert_true(cached(pc, 1));
    assert_true(cached(pc, 2));
    prefix_cache_release(pc, e); /* the only owner: frees it */

    prefix_cache *off = prefix_cache_create(0);
    assert_non_null(off);
    insert_key(off, 1, 1);
    assert_false(cached(off, 1));
    prefix_cache_free(off);
    prefix_cache_free(pc);
}

/* Eviction takes a pinned entry out of the cache but does not free it: its
 * KV stays readable and writable until the last pin is released. */
static void test_pinned_entry_outlives_eviction(void **state)
{
    (void)state;
    prefix_cache *pc = prefix_cache_create(2 * entry_bytes(4));
    assert_non_null(pc);
    const int32_t key = 1;
    prefix_cache_entry *first = prefix_cache_insert(pc, &key, 1, marked_kv(4, 1));
    prefix_cache_entry *second = prefix_cache_lookup(pc, &key, 1); /* two pins */
    assert_ptr_equal(first, second);
    insert_key(pc, 2, 4);
    insert_key(pc, 3, 4); /* evicts 1, pinned */
    assert_false(cached(pc, 1));
    const kv_prefix *kv = prefix_cache_kv(first);
    assert_true(((const float *)kv->k)[0] == 1.0f);
    ((float *)kv_prefix_v(kv, 0))[3] = 5.0f;
    prefix_cache_release(pc, first);
    assert_true(((const float *)prefix_cache_kv(second)->k)[0] == 1.0f); /* still pinned once */
    assert_true(((float *)kv_prefix_v(kv, 0))[3] == 5.0f);
    prefix_cache_release(pc, second); /* freed here */
    prefix_cache_free(pc);
}

static prefix_cache_stats stats_of(prefix_cache *pc)
{
    prefix_cache_stats st;
    prefix_cache_stats_get(pc, &st);
    return st;
}

/* Lookups count as hits or misses, contains() as neither; evictions and the
 * bytes of the kept entries follow inserts, oversize entries count for
 * nothing, and an evicted entry's bytes leave the count even while pinned. */
static void test_counts_hits_misses_evictions_bytes(void **state)
{
    (void)state;
    const size_t budget = 2 * entry_bytes(4);
    prefix_cache *pc = prefix_cache_create(budget);
    assert_non_null(pc);
    prefix_cache_stats st = stats_of(pc);
    assert_true(st.hits == 0 && st.misses == 0 && st.evictions == 0 && st.bytes == 0);
    assert_int_equal(st.max_bytes, budget);

    const int32_t a = 1, b = 2;
    assert_false(cached(pc, a));
    assert_int_equal(stats_of(pc).misses, 1);
    prefix_cache_entry *pinned = prefix_cache_insert(pc, &a, 1, marked_kv(4, 1));
    assert_int_equal(stats_of(pc).bytes, entry_bytes(4));
    assert_true(cached(pc, a));
    assert_true(cached(pc, a));
    assert_true(prefix_cache_contains(pc, &a, 1));
    assert_false(prefix_cache_contains(pc, &b, 1));
    st = stats_of(pc);
    assert_true(st.hits == 2 && st.misses == 1 && st.evictions == 0);

    insert_key(pc, b, 4);
    assert_int_equal(stats_of(pc).bytes, budget);
    insert_key(pc, 3, 16); /* oversize */
    st = stats_of(pc);
    assert_true(st.bytes == budget && st.evictions == 0);
    insert_key(pc, 4, 4); /* evicts a, still pinned */
    st = stats_of(pc);
    assert_true(st.bytes == budget && st.evictions == 1);
    insert_key(pc, 5, 1); /* evicts b */
    st = stats_of(pc);
    assert_true(st.bytes == entry_bytes(4) + entry_bytes(1) && st.evictions == 2);
    assert_true(st.hits == 2 && st.misses == 1);
    prefix_cache_release(pc, pinned);
    prefix_cache_free(pc);
}

/* Threads look up, insert and release over a few keys in a cache that
 * holds half of them: every hit must be the entry of its own key. */
#define THREADS 4
#define KEYS    8
#define ROUNDS  2000

typedef struct {
    prefix_cache *pc;
    uint64_t seed;
    int wrong;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    for (int r = 0; r < ROUNDS; r++) {
        w->seed = w->seed * 6364136223846793005ull + 1442695040888963407ull;
        const int32_t tokens[2] = {(int32_t)(w->seed >> 33) % KEYS, 77};
        prefix_cache_entry *e = prefix_cache_lookup(w->pc, tokens, 2);
        if (!e) {
            kv_prefix *kv = NULL;
            lms_error err = {0};
            if (kv_prefix_create(1, 1, 1, 4, false, &kv, &err) != LMS_OK) {
                w->wrong++;
                continue;
            }
            ((float *)kv->k)[0] = (float)tokens[0];
            e = prefix_cache_insert(w->pc, tokens, 2, kv);
            if (!e) {
                w->wrong++;
                continue;
            }
        }
        if (((const float *)prefix_cache_kv(e)->k)[0] != (float)tokens[0]) w->wrong++;
        prefix_cache_release(w->pc, e);
    }
    return NULL;
}

static void test_concurrent_use(void **state)
{
    (void)state;
    prefix_cache *pc = prefix_cache_create(KEYS / 2 * entry_bytes(4));
    assert_non_null(pc);
    pthread_t threads[THREADS];
    worker workers[THREADS];
    for (int t = 0; t < THREADS; t++) {
        workers[t] = (worker){pc, (uint64_t)t + 1, 0};
        assert_int_equal(pthread_create(&threads[t], NULL, work, &workers[t]), 0);
    }
    for (int t = 0; t < THREADS; t++) {
        assert_int_equal(pthread_join(threads[t], NULL), 0);
        assert_int_equal(workers[t].wrong, 0);
    }
    prefix_cache_free(pc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hits_only_the_exact_sequence),
        cmocka_unit_test(test_colliding_hashes_stay_apart),
        cmocka_unit_test(test_evicts_least_recently_used),
        cmocka_unit_test(test_keeps_within_the_byte_budget),
        cmocka_unit_test(test_oversize_entry_is_not_kept),
        cmocka_unit_test(test_pinned_entry_outlives_eviction),
        cmocka_unit_test(test_counts_hits_misses_evictions_bytes),
        cmocka_unit_test(test_concurrent_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
