/*
 * tokenizer_vocab.c — the tokenizer's lookup tables: token texts by id (one
 * arena), the text -> id hash index and the (left, right) -> merge rank hash.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "tokenizer_impl.h"

/* Texts longer than this are converted through a heap buffer. */
#define SHORT_TEXT 512

static uint64_t hash_bytes(const char *s, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: vocab keys are short */
    for (size_t i = 0; i < len; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static uint64_t hash_pair(uint64_t key)
{
    key ^= key >> 33; /* splitmix64 finalizer */
    key *= 0xff51afd7ed558ccdull;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ull;
    return key ^ (key >> 33);
}

static uint32_t pow2_at_least(size_t n)
{
    uint32_t cap = 16;
    while (cap < n && cap < (1u << 31))
        cap <<= 1;
    return cap;
}

lms_status tok_vocab_alloc(lms_tokenizer *tok, lms_error *err)
{
    size_t n = (size_t)tok->n_vocab;
    tok->tok_off = lms_calloc(n, sizeof *tok->tok_off);
    tok->tok_len = lms_calloc(n, sizeof *tok->tok_len);
    tok->tok_flags = lms_calloc(n, 1);
    tok->arena_cap = n * 8;
    tok->arena = lms_alloc(tok->arena_cap);
    if (!tok->tok_off || !tok->tok_len || !tok->tok_flags || !tok->arena)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory for %d tokens",
                        tok->n_vocab);
    return LMS_OK;
}

static lms_status arena_append(lms_tokenizer *tok, const char *text, size_t len, uint32_t *off,
                               lms_error *err)
{
    if (tok->arena_len + len > UINT32_MAX)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: token texts exceed 4 GiB");
    if (tok->arena_len + len > tok->arena_cap) {
        size_t cap = tok->arena_cap * 2 + len;
        char *grown = lms_alloc(cap);
        if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        memcpy(grown, tok->arena, tok->arena_len);
        lms_free(tok->arena);
        tok->arena = grown;
        tok->arena_cap = cap;
    }
    memcpy(tok->arena + tok->arena_len, text, len);
    *off = (uint32_t)tok->arena_len;
    tok->arena_len += len;
    return LMS_OK;
}

/* Byte-level vocabularies spell each byte as one code point; the raw form is
 * what encode and decode work on. Returns false when a code point stands for
 * no byte (such a token is kept verbatim). raw has room for len bytes. */
static bool unmap_bytes(const char *text, size_t len, char *raw, size_t *raw_len)
{
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        i += tok_utf8_next(text + i, len - i, &cp);
        int b = tok_cp_to_byte(cp);
        if (b < 0) return false;
        raw[n++] = (char)b;
    }
    *raw_len = n;
    return true;
}

/* Calls fn with the stored form of text (raw bytes for byte-level). */
typedef lms_status (*stored_fn)(lms_tokenizer *tok, const char *stored, size_t len, void *ctx,
                                lms_error *err);

static lms_status with_stored_form(lms_tokenizer *tok, const char *text, size_t len, bool verbatim,
                                   stored_fn fn, void *ctx, lms_error *err)
{
    if (verbatim || tok->kind != TOK_BYTE_LEVEL) return fn(tok, text, len, ctx, err);
    char small[SHORT_TEXT];
    char *raw = len <= sizeof small ? small : malloc(len);
    if (!raw) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    size_t raw_len;
    lms_status st = unmap_bytes(text, len, raw, &raw_len) ? fn(tok, raw, raw_len, ctx, err)
                                                          : fn(tok, text, len, ctx, err);
    if (raw != small) free(raw);
    return st;
}

typedef struct {
    int32_t id;
    bool added;
} set_ctx;

static lms_status set_stored(lms_tokenizer *tok, const char *stored, size_t len, void *ctx,
                             lms_error *err)
{
    set_ctx *c = ctx;
    lms_status st = arena_append(tok, stored, len, &tok->tok_off[c->id], err);
    if (st != LMS_OK) return st;
    tok->tok_len[c->id] = (uint32_t)len;
    tok->tok_flags[c->id] |= TOK_PRESENT | (c->added ? TOK_ADDED : 0);
    return LMS_OK;
}

lms_status tok_vocab_set(lms_tokenizer *tok, int32_t id, const char *text, size_t len, bool added,
                         lms_error *err)
{
    if (id < 0 || id >= tok->n_vocab)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: token id %d out of range",
                        (int)id);
    set_ctx c = {id, added};
    return with_stored_form(tok, text, len, added, set_stored, &c, err);
}

static int32_t map_find(const lms_tokenizer *tok, const char *text, size_t len, uint32_t *slot)
{
    uint32_t i = (uint32_t)hash_bytes(text, len) & tok->map_mask;
    for (;; i = (i + 1) & tok->map_mask) {
        int32_t id = tok->map_slots[i];
        if (id < 0 ||
            (tok->tok_len[id] == len && !memcmp(tok->arena + tok->tok_off[id], text, len))) {
            *slot = i;
            return id;
        }
    }
}

lms_status tok_vocab_index(lms_tokenizer *tok, lms_error *err)
{
    uint32_t cap = pow2_at_least((size_t)tok->n_vocab * 2);
    tok->map_slots = lms_alloc((size_t)cap * sizeof *tok->map_slots);
    if (!tok->map_slots) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    memset(tok->map_slots, 0xff, (size_t)cap * sizeof *tok->map_slots);
    tok->map_mask = cap - 1;
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        if (!(tok->tok_flags[id] & TOK_PRESENT)) continue;
        uint32_t slot;
        int32_t old = map_find(tok, tok->arena + tok->tok_off[id], tok->tok_len[id], &slot);
        /* As in the reference, an added token's text maps to the added id. */
        if (old < 0 || ((tok->tok_flags[id] & TOK_ADDED) && !(tok->tok_flags[old] & TOK_ADDED)))
            tok->map_slots[slot] = id;
    }
    return LMS_OK;
}

int32_t tok_vocab_lookup(const lms_tokenizer *tok, const char *text, size_t len)
{
    uint32_t slot;
    return map_find(tok, text, len, &slot);
}

lms_status tok_pairs_alloc(lms_tokenizer *tok, size_t n_merges, lms_error *err)
{
    uint32_t cap = pow2_at_least(n_merges * 2 + 1);
    tok->pairs = lms_calloc(cap, sizeof *tok->pairs);
    if (!tok->pairs) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    tok->pair_mask = cap - 1;
    return LMS_OK;
}

static tok_pair_slot *pair_slot(const lms_tokenizer *tok, uint64_t key)
{
    uint32_t i = (uint32_t)hash_pair(key) & tok->pair_mask;
    while (tok->pairs[i].key && tok->pairs[i].key != key)
        i = (i + 1) & tok->pair_mask;
    return &tok->pairs[i];
}

static uint64_t pair_key(int32_t left, int32_t right)
{
    return (((uint64_t)(uint32_t)left << 32) | (uint32_t)right) + 1;
}

static lms_status lookup_stored(lms_tokenizer *tok, const char *stored, size_t len, void *ctx,
                                lms_error *err)
{
    (void)err;
    *(int32_t *)ctx = tok_vocab_lookup(tok, stored, len);
    return LMS_OK;
}

int32_t tok_vocab_lookup_spelled(lms_tokenizer *tok, const char *text, size_t len)
{
    int32_t id = -1;
    if (with_stored_form(tok, text, len, false, lookup_stored, &id, NULL) != LMS_OK) return -1;
    return id;
}

lms_status tok_pairs_add(lms_tokenizer *tok, const char *left, size_t left_len, const char *right,
                         size_t right_len, uint32_t rank, lms_error *err)
{
    int32_t l = -1, r = -1, m = -1;
    lms_status st = with_stored_form(tok, left, left_len, false, lookup_stored, &l, err);
    if (st == LMS_OK) st = with_stored_form(tok, right, right_len, false, lookup_stored, &r, err);
    if (st != LMS_OK) return st;
    if (l < 0 || r < 0)
        return lms_fail(
            err, LMS_ERR_FORMAT, NULL, NULL,
            "tokenizer: merge %u (\"%.*s\" \"%.*s\") names a token not in the vocabulary", rank,
            (int)(left_len > 64 ? 64 : left_len), left, (int)(right_len > 64 ? 64 : right_len),
            right);
    size_t ll = tok->tok_len[l], rl = tok->tok_len[r];
    char small[SHORT_TEXT];
    char *joined = ll + rl <= sizeof small ? small : malloc(ll + rl);
    if (!joined) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    memcpy(joined, tok->arena + tok->tok_off[l], ll);
    memcpy(joined + ll, tok->arena + tok->tok_off[r], rl);
    m = tok_vocab_lookup(tok, joined, ll + rl);
    if (joined != small) free(joined);
    if (m < 0)
        return lms_fail(
            err, LMS_ERR_FORMAT, NULL, NULL,
            "tokenizer: merge %u (\"%.*s\" \"%.*s\") makes a token not in the vocabulary", rank,
            (int)(left_len > 64 ? 64 : left_len), left, (int)(right_len > 64 ? 64 : right_len),
            right);
    uint64_t key = pair_key(l, r);
    tok_pair_slot *slot = pair_slot(tok, key);
    if (!slot->key) {
        if (tok->n_pairs * 2 >= tok->pair_mask)
            return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "tokenizer: merge table full");
        tok->n_pairs++;
    }
    /* A repeated merge keeps its last rank, as the reference's Map does. */
    *slot = (tok_pair_slot){key, rank, m};
    return LMS_OK;
}

uint32_t tok_pairs_rank(const lms_tokenizer *tok, int32_t left, int32_t right, int32_t *merged)
{
    if (tok->merges_by_score) {
        size_t ll = tok->tok_len[left], rl = tok->tok_len[right];
        char joined[SHORT_TEXT];
        if (ll + rl > sizeof joined) return TOK_NO_RANK;
        memcpy(joined, tok->arena + tok->tok_off[left], ll);
        memcpy(joined + ll, tok->arena + tok->tok_off[right], rl);
        int32_t m = tok_vocab_lookup(tok, joined, ll + rl);
        if (m < 0) return TOK_NO_RANK;
        *merged = m;
        return tok->score_rank[m];
    }
    if (!tok->pairs) return TOK_NO_RANK;
    const tok_pair_slot *slot = pair_slot(tok, pair_key(left, right));
    if (!slot->key) return TOK_NO_RANK;
    *merged = slot->merged;
    return slot->rank;
}

void tok_vocab_free(lms_tokenizer *tok)
{
    lms_free(tok->tok_off);
    lms_free(tok->tok_len);
    lms_free(tok->tok_flags);
    lms_free(tok->arena);
    lms_free(tok->map_slots);
    lms_free(tok->pairs);
    lms_free(tok->score_rank);
}
