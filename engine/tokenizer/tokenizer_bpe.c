/*
 * tokenizer_bpe.c — the BPE model: merges one pre-tokenized piece into ids.
 *
 * Symbols live in an array as a doubly-linked list; candidate merges sit in a
 * binary heap ordered by (rank, position of the left symbol), which is the
 * reference's order (lowest rank first, leftmost first among equal ranks).
 * Stale candidates are recognised when popped by the ids they were made
 * for, so a piece of n symbols costs O(n log n), never a rescan.
 * Then: ignore_merges (a piece already in the vocabulary is one token),
 * SentencePiece byte fallback (<0xNN>) and unk, fused like the reference.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

typedef struct {
    int32_t id; /* -1: a character outside the vocabulary */
    int32_t prev, next;
    uint32_t start, len; /* bytes of the piece; len 0 once merged away */
} bpe_symbol;

typedef struct {
    uint64_t key; /* rank << 32 | left symbol index */
    int32_t left_id, right_id, merged;
} bpe_candidate;

struct tok_bpe_scratch {
    bpe_symbol *syms;
    size_t syms_cap;
    bpe_candidate *heap;
    size_t heap_n, heap_cap;
};

tok_bpe_scratch *tok_bpe_scratch_new(void)
{
    return calloc(1, sizeof(tok_bpe_scratch));
}

void tok_bpe_scratch_free(tok_bpe_scratch *s)
{
    if (!s) return;
    free(s->syms);
    free(s->heap);
    free(s);
}

lms_status tok_ids_push(tok_ids *v, int32_t id, lms_error *err)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        int32_t *grown = realloc(v->ids, cap * sizeof *grown);
        if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        v->ids = grown;
        v->cap = cap;
    }
    v->ids[v->n++] = id;
    return LMS_OK;
}

static bool heap_push(tok_bpe_scratch *s, bpe_candidate c)
{
    if (s->heap_n == s->heap_cap) {
        size_t cap = s->heap_cap ? s->heap_cap * 2 : 64;
        bpe_candidate *grown = realloc(s->heap, cap * sizeof *grown);
        if (!grown) return false;
        s->heap = grown;
        s->heap_cap = cap;
    }
    size_t i = s->heap_n++;
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (s->heap[parent].key <= c.key) break;
        s->heap[i] = s->heap[parent];
        i = parent;
    }
    s->heap[i] = c;
    return true;
}

static bpe_candidate heap_pop(tok_bpe_scratch *s)
{
    bpe_candidate top = s->heap[0], last = s->heap[--s->heap_n];
    size_t i = 0, n = s->heap_n;
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= n) break;
        if (child + 1 < n && s->heap[child + 1].key < s->heap[child].key) child++;
        if (last.key <= s->heap[child].key) break;
        s->heap[i] = s->heap[child];
        i = child;
    }
    if (n) s->heap[i] = last;
    return top;
}

/* Queues the merge of symbol left with its right neighbour, if any. */
static bool consider(const lms_tokenizer *tok, tok_bpe_scratch *s, int32_t left)
{
    if (left < 0) return true;
    const bpe_symbol *l = &s->syms[left];
    if (l->next < 0) return true;
    const bpe_symbol *r = &s->syms[l->next];
    if (l->id < 0 || r->id < 0) return true;
    int32_t merged;
    uint32_t rank = tok_pairs_rank(tok, l->id, r->id, &merged);
    if (rank == TOK_NO_RANK) return true;
    return heap_push(
        s, (bpe_candidate){((uint64_t)rank << 32) | (uint32_t)left, l->id, r->id, merged});
}

static lms_status build_symbols(const lms_tokenizer *tok, tok_bpe_scratch *s, const char *piece,
                                size_t len, size_t *n_syms, lms_error *err)
{
    if (len > INT32_MAX)
        return lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, NULL, NULL,
                        "tokenizer: a word of %zu bytes is too long", len);
    if (len > s->syms_cap) {
        bpe_symbol *grown = realloc(s->syms, len * sizeof *grown);
        if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        s->syms = grown;
        s->syms_cap = len;
    }
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        size_t clen = 1;
        int32_t id;
        if (tok->kind == TOK_BYTE_LEVEL) {
            id = tok->byte_id[(unsigned char)piece[i]];
        } else {
            uint32_t cp;
            clen = tok_utf8_next(piece + i, len - i, &cp);
            id = tok_vocab_lookup(tok, piece + i, clen);
        }
        s->syms[n] = (bpe_symbol){id, (int32_t)n - 1, (int32_t)n + 1, (uint32_t)i, (uint32_t)clen};
        n++;
        i += clen;
    }
    s->syms[n - 1].next = -1;
    *n_syms = n;
    return LMS_OK;
}

static lms_status merge_all(const lms_tokenizer *tok, tok_bpe_scratch *s, size_t n, lms_error *err)
{
    s->heap_n = 0;
    for (size_t i = 0; i + 1 < n; i++)
        if (!consider(tok, s, (int32_t)i)) goto nomem;
    while (s->heap_n) {
        bpe_candidate c = heap_pop(s);
        int32_t li = (int32_t)(uint32_t)c.key;
        bpe_symbol *l = &s->syms[li];
        if (!l->len || l->id != c.left_id || l->next < 0) continue;
        bpe_symbol *r = &s->syms[l->next];
        if (r->id != c.right_id) continue;
        l->id = c.merged;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (l->next >= 0) s->syms[l->next].prev = li;
        if (!consider(tok, s, l->prev) || !consider(tok, s, li)) goto nomem;
    }
    return LMS_OK;
nomem:
    return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
}

static lms_status push_token(const lms_tokenizer *tok, tok_ids *out, int32_t id, bool *unk_run,
                             lms_error *err)
{
    bool is_unk = id == tok->unk_id;
    if (is_unk && tok->fuse_unk && *unk_run) return LMS_OK;
    *unk_run = is_unk;
    return tok_ids_push(out, id, err);
}

/* A character outside the vocabulary: its bytes as <0xNN> when the model has
 * byte fallback and every byte token, else unk. */
static lms_status push_unknown(const lms_tokenizer *tok, const char *text, size_t len, tok_ids *out,
                               bool *unk_run, lms_error *err)
{
    bool bytes_ok = tok->byte_fallback;
    for (size_t k = 0; k < len && bytes_ok; k++)
        bytes_ok = tok->byte_id[(unsigned char)text[k]] >= 0;
    if (bytes_ok) {
        for (size_t k = 0; k < len; k++) {
            lms_status st =
                push_token(tok, out, tok->byte_id[(unsigned char)text[k]], unk_run, err);
            if (st != LMS_OK) return st;
        }
        return LMS_OK;
    }
    if (tok->unk_id < 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "untokenizable_text", NULL,
                        "the text has a character (\"%.*s\") that the vocabulary cannot "
                        "represent and the tokenizer has no unknown token",
                        (int)len, text);
    return push_token(tok, out, tok->unk_id, unk_run, err);
}

lms_status tok_bpe_piece(const lms_tokenizer *tok, tok_bpe_scratch *s, const char *piece,
                         size_t len, tok_ids *out, bool *unk_run, lms_error *err)
{
    if (len == 0) return LMS_OK;
    if (tok->ignore_merges) {
        int32_t id = tok_vocab_lookup(tok, piece, len);
        if (id >= 0) return push_token(tok, out, id, unk_run, err);
    }
    size_t n = 0;
    lms_status st = build_symbols(tok, s, piece, len, &n, err);
    if (st == LMS_OK && n > 1) st = merge_all(tok, s, n, err);
    for (int32_t i = 0; st == LMS_OK && i >= 0; i = s->syms[i].next) {
        const bpe_symbol *sym = &s->syms[i];
        st = sym->id >= 0 ? push_token(tok, out, sym->id, unk_run, err)
                          : push_unknown(tok, piece + sym->start, sym->len, out, unk_run, err);
    }
    return st;
}
