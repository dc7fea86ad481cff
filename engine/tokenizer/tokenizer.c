/*
 * tokenizer.c — the tokenizer's public API (lmscore.h): the encode pipeline
 * (invalid UTF-8, added tokens, normalizer, pre-tokenizer, BPE, template),
 * decode, single-token lookup and the vocabulary's special ids.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

int32_t lms_tokenizer_vocab_size(const lms_tokenizer *tok)
{
    return tok->n_vocab;
}

int32_t lms_tokenizer_bos_id(const lms_tokenizer *tok)
{
    return tok->bos_id;
}

int32_t lms_tokenizer_eos_id(const lms_tokenizer *tok)
{
    return tok->eos_id;
}

/* ---- encode ---- */

typedef struct {
    size_t off, len;
    const tok_added *added; /* NULL for text */
} section;

typedef struct {
    section *items;
    size_t n, cap;
} section_list;

static bool sections_push(section_list *l, section s)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        section *grown = realloc(l->items, cap * sizeof *grown);
        if (!grown) return false;
        l->items = grown;
        l->cap = cap;
    }
    l->items[l->n++] = s;
    return true;
}

/* The longest added token at text[i], as the reference's trie finds it. */
static const tok_added *added_at(const lms_tokenizer *tok, const char *text, size_t len, size_t i)
{
    unsigned char b = (unsigned char)text[i];
    for (uint32_t k = tok->added_first[b]; k < tok->added_first[b + 1]; k++) {
        const tok_added *a = &tok->added[k];
        if (a->len <= len - i && !memcmp(tok->arena + a->off, text + i, a->len)) return a;
    }
    return NULL;
}

static lms_status split_added(const lms_tokenizer *tok, const char *text, size_t len,
                              section_list *out, lms_error *err)
{
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        const tok_added *a = tok->n_added ? added_at(tok, text, len, i) : NULL;
        if (!a) {
            i++;
            continue;
        }
        if ((i > start && !sections_push(out, (section){start, i - start, NULL})) ||
            !sections_push(out, (section){i, a->len, a}))
            return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        i += a->len;
        start = i;
    }
    if (start < len && !sections_push(out, (section){start, len - start, NULL}))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    /* lstrip/rstrip trim the neighbours' whitespace. A trimmed neighbour that
     * was itself an added token is text from then on, as in the reference. */
    for (size_t k = 0; k < out->n; k++) {
        const tok_added *a = out->items[k].added;
        if (!a) continue;
        if (a->lstrip && k > 0) {
            section *prev = &out->items[k - 1];
            size_t kept = tok_js_trim_end(text + prev->off, prev->len);
            if (kept != prev->len) prev->added = NULL;
            prev->len = kept;
        }
        if (a->rstrip && k + 1 < out->n) {
            section *next = &out->items[k + 1];
            size_t cut = tok_js_trim_start(text + next->off, next->len);
            if (cut) next->added = NULL;
            next->off += cut;
            next->len -= cut;
        }
    }
    return LMS_OK;
}

typedef struct {
    const lms_tokenizer *tok;
    tok_bpe_scratch *scratch;
    tok_ids *out;
    bool unk_run;
} piece_ctx;

static lms_status encode_piece(void *ctx, const char *piece, size_t len, lms_error *err)
{
    piece_ctx *c = ctx;
    return tok_bpe_piece(c->tok, c->scratch, piece, len, c->out, &c->unk_run, err);
}

static lms_status encode_text_section(const lms_tokenizer *tok, const char *text, size_t len,
                                      pcre2_match_data *md, piece_ctx *pc, lms_error *err)
{
    char *norm = NULL;
    if (tok->n_norm) {
        lms_status st = tok_normalize(tok, text, len, &norm, &len, err);
        if (st != LMS_OK) return st;
        text = norm;
    }
    lms_status st = LMS_OK;
    if (len > 0 && tok->add_prefix_space && text[0] != ' ') {
        char *spaced = malloc(len + 1);
        if (!spaced) {
            free(norm);
            return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        }
        spaced[0] = ' ';
        memcpy(spaced + 1, text, len);
        free(norm);
        norm = spaced;
        text = spaced;
        len++;
    }
    pc->unk_run = false; /* unk is fused within one section, as the model call does */
    if (len > 0) st = tok_pretokenize(tok, text, len, md, encode_piece, pc, err);
    free(norm);
    return st;
}

static lms_status encode_clean(const lms_tokenizer *tok, const char *text, size_t len, tok_ids *out,
                               lms_error *err)
{
    section_list sections = {0};
    tok_bpe_scratch *scratch = tok_bpe_scratch_new();
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    lms_status st = scratch && md
                        ? split_added(tok, text, len, &sections, err)
                        : lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    piece_ctx pc = {tok, scratch, out, false};
    for (size_t k = 0; st == LMS_OK && k < sections.n; k++) {
        const section *s = &sections.items[k];
        if (s->len == 0) continue;
        if (s->added)
            st = tok_ids_push(out, s->added->id, err);
        else
            st = encode_text_section(tok, text + s->off, s->len, md, &pc, err);
    }
    free(sections.items);
    tok_bpe_scratch_free(scratch);
    pcre2_match_data_free(md);
    return st;
}

lms_status lms_tokenizer_encode(const lms_tokenizer *tok, const char *text, size_t len,
                                bool add_special, int32_t **ids, size_t *n_ids, lms_error *err)
{
    if (!tok || !ids || !n_ids || (!text && len))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                        "tokenizer_encode: missing argument");
    bool valid;
    size_t clean_len = tok_utf8_valid_len(text, len, &valid);
    char *clean = NULL;
    if (!valid) {
        clean = malloc(clean_len);
        if (!clean) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        tok_utf8_replace_invalid(text, len, clean);
    }
    tok_ids out = {0};
    lms_status st = LMS_OK;
    for (int k = 0; add_special && st == LMS_OK && k < tok->n_prefix; k++)
        st = tok_ids_push(&out, tok->prefix[k], err);
    if (st == LMS_OK) st = encode_clean(tok, clean ? clean : text, clean_len, &out, err);
    for (int k = 0; add_special && st == LMS_OK && k < tok->n_suffix; k++)
        st = tok_ids_push(&out, tok->suffix[k], err);
    if (st == LMS_OK && !out.ids && !(out.ids = malloc(sizeof *out.ids)))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    free(clean);
    if (st != LMS_OK) {
        free(out.ids);
        return st;
    }
    *ids = out.ids;
    *n_ids = out.n;
    return LMS_OK;
}

lms_status lms_tokenizer_single_token(const lms_tokenizer *tok, const char *text, size_t len,
                                      int32_t *id, lms_error *err)
{
    int32_t *ids;
    size_t n;
    lms_status st = lms_tokenizer_encode(tok, text, len, false, &ids, &n, err);
    if (st != LMS_OK) return st;
    if (n == 1) *id = ids[0];
    free(ids);
    if (n != 1)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "label_not_single_token", NULL,
                        "the text \"%.*s\" is %zu tokens, not exactly one",
                        (int)(len > 64 ? 64 : len), text ? text : "", n);
    return LMS_OK;
}

/* ---- decode ---- */

/* SentencePiece text: U+2581 back to spaces (the Replace decoder). */
static bool put_spiece(tok_buf *b, const char *s, size_t n)
{
    size_t from = 0;
    for (size_t i = 0; i + TOK_SPIECE_MARK_LEN <= n; i++) {
        if (memcmp(s + i, TOK_SPIECE_MARK, TOK_SPIECE_MARK_LEN)) continue;
        if (!tok_buf_put(b, s + from, i - from) || !tok_buf_put(b, " ", 1)) return false;
        i += TOK_SPIECE_MARK_LEN - 1;
        from = i + 1;
    }
    return tok_buf_put(b, s + from, n - from);
}

/* The reference decodes each run of <0xNN> tokens with a fresh TextDecoder,
 * which drops a byte order mark at the start of the run. */
static void drop_run_bom(tok_buf *b, size_t run_start)
{
    static const char bom[3] = {'\xef', '\xbb', '\xbf'};
    if (b->len - run_start >= 3 && !memcmp(b->buf + run_start, bom, 3)) {
        memmove(b->buf + run_start, b->buf + run_start + 3, b->len - run_start - 3);
        b->len -= 3;
    }
}

static lms_status check_ids(const lms_tokenizer *tok, const int32_t *ids, size_t n, lms_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "negative_token_id", NULL,
                            "token %zu: id %d is negative", i, (int)ids[i]);
        if (ids[i] >= tok->n_vocab || !(tok->tok_flags[ids[i]] & TOK_PRESENT))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "token_id_exceeds_vocab", NULL,
                            "token %zu: id %d is not in the vocabulary of %d", i, (int)ids[i],
                            (int)tok->n_vocab);
    }
    return LMS_OK;
}

static bool decode_bytes(const lms_tokenizer *tok, const int32_t *ids, size_t n, bool skip_special,
                         tok_buf *raw)
{
    bool ok = true;
    size_t run_start = SIZE_MAX;
    for (size_t i = 0; i < n && ok; i++) {
        uint8_t flags = tok->tok_flags[ids[i]];
        if (skip_special && (flags & TOK_SPECIAL)) continue;
        const char *text = tok->arena + tok->tok_off[ids[i]];
        size_t len = tok->tok_len[ids[i]];
        if (tok->kind == TOK_BYTE_LEVEL) {
            ok = tok_buf_put(raw, text, len);
            continue;
        }
        if (flags & TOK_BYTE) {
            if (run_start == SIZE_MAX) run_start = raw->len;
            char byte = (char)strtol(text + 3, NULL, 16);
            ok = tok_buf_put(raw, &byte, 1);
            continue;
        }
        if (run_start != SIZE_MAX) drop_run_bom(raw, run_start);
        run_start = SIZE_MAX;
        ok = put_spiece(raw, text, len);
    }
    if (run_start != SIZE_MAX) drop_run_bom(raw, run_start);
    return ok;
}

lms_status lms_tokenizer_decode(const lms_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                bool skip_special, char **text, size_t *len, lms_error *err)
{
    if (!tok || !text || !len || (!ids && n_ids))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                        "tokenizer_decode: missing argument");
    lms_status st = check_ids(tok, ids, n_ids, err);
    if (st != LMS_OK) return st;
    tok_buf raw = {0};
    if (!decode_bytes(tok, ids, n_ids, skip_special, &raw) || !tok_buf_put(&raw, "", 0)) {
        free(raw.buf);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    }
    size_t skip = 0;
    while (skip < (size_t)tok->decode_strip_spaces && skip < raw.len && raw.buf[skip] == ' ')
        skip++;
    bool valid;
    size_t out_len = tok_utf8_valid_len(raw.buf + skip, raw.len - skip, &valid);
    char *out = malloc(out_len + 1);
    if (!out) {
        free(raw.buf);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    }
    /* Bytes that are not UTF-8 (a token sequence cut inside a character)
     * become U+FFFD, as the reference's TextDecoder does. */
    tok_utf8_replace_invalid(raw.buf + skip, raw.len - skip, out);
    out[out_len] = '\0';
    free(raw.buf);
    *text = out;
    *len = out_len;
    return LMS_OK;
}
