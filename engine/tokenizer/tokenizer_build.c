/*
 * tokenizer_build.c — building a tokenizer, shared by the two loaders
 * (tokenizer_load_json.c, tokenizer_load_gguf.c): create, add added tokens,
 * regex splits and normalizer steps, finalize; and freeing it.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"
#include "tokenizer_impl.h"

lms_status tok_create(tok_kind kind, int32_t n_vocab, lms_tokenizer **out, lms_error *err)
{
    if (n_vocab <= 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: the vocabulary is empty");
    lms_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    tok->kind = kind;
    tok->n_vocab = n_vocab;
    tok->unk_id = tok->bos_id = tok->eos_id = -1;
    for (int b = 0; b < 256; b++)
        tok->byte_id[b] = -1;
    lms_status st = tok_vocab_alloc(tok, err);
    if (st != LMS_OK) {
        lms_tokenizer_free(tok);
        return st;
    }
    *out = tok;
    return LMS_OK;
}

lms_status tok_add_added(lms_tokenizer *tok, int32_t id, const char *content, size_t len,
                         bool special, bool lstrip, bool rstrip, lms_error *err)
{
    lms_status st = tok_vocab_set(tok, id, content, len, true, err);
    if (st != LMS_OK) return st;
    if (special) tok->tok_flags[id] |= TOK_SPECIAL;
    if (len == 0) return LMS_OK; /* never matches, as in the reference */
    tok_added *grown = realloc(tok->added, (tok->n_added + 1) * sizeof *grown);
    if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    tok->added = grown;
    tok->added[tok->n_added++] =
        (tok_added){id, tok->tok_off[id], tok->tok_len[id], lstrip, rstrip};
    return LMS_OK;
}

lms_status tok_add_split_regex(lms_tokenizer *tok, const char *pattern, size_t len, lms_error *err)
{
    if (tok->n_split == TOK_MAX_SPLITS)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "tokenizer: more than %d regex pre-tokenizers", TOK_MAX_SPLITS);
    lms_status st = tok_regex_compile(pattern, len, &tok->split[tok->n_split], err);
    if (st == LMS_OK) tok->n_split++;
    return st;
}

static char *dup_bytes(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

lms_status tok_add_norm(lms_tokenizer *tok, tok_norm_kind kind, const char *from, size_t from_len,
                        const char *to, size_t to_len, lms_error *err)
{
    if (tok->n_norm == TOK_MAX_NORMALIZE)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL, "tokenizer: more than %d normalizers",
                        TOK_MAX_NORMALIZE);
    if (kind == TOK_NORM_REPLACE && from_len == 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: a Replace normalizer has an empty pattern");
    tok_norm_step *step = &tok->norm[tok->n_norm];
    *step = (tok_norm_step){kind, dup_bytes(from ? from : "", from_len), from_len,
                            dup_bytes(to ? to : "", to_len), to_len};
    tok->n_norm++;
    if (!step->from || !step->to)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    return LMS_OK;
}

int32_t tok_find_token(lms_tokenizer *tok, const char *text, size_t len)
{
    for (size_t k = tok->n_added; k-- > 0;) {
        const tok_added *a = &tok->added[k];
        if (a->len == len && !memcmp(tok->arena + a->off, text, len)) return a->id;
    }
    return tok_vocab_lookup_spelled(tok, text, len);
}

static int compare_added(const void *pa, const void *pb, void *arena)
{
    const tok_added *a = pa, *b = pb;
    const unsigned char *ta = (const unsigned char *)arena + a->off;
    const unsigned char *tb = (const unsigned char *)arena + b->off;
    if (ta[0] != tb[0]) return ta[0] < tb[0] ? -1 : 1;
    if (a->len != b->len) return a->len > b->len ? -1 : 1; /* longest first */
    return 0;
}

static lms_status index_bytes(lms_tokenizer *tok, lms_error *err)
{
    for (int b = 0; b < 256; b++) {
        if (tok->kind == TOK_BYTE_LEVEL) {
            char raw = (char)b;
            tok->byte_id[b] = tok_vocab_lookup(tok, &raw, 1);
            if (tok->byte_id[b] < 0)
                return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                                "tokenizer: the byte-level vocabulary has no token for byte 0x%02X",
                                b);
        } else if (tok->byte_fallback) {
            static const char hex[] = "0123456789ABCDEF";
            char name[6] = {'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
            int32_t id = tok_vocab_lookup(tok, name, sizeof name);
            tok->byte_id[b] = id;
            if (id >= 0) tok->tok_flags[id] |= TOK_BYTE;
        }
    }
    return LMS_OK;
}

lms_status tok_finalize(lms_tokenizer *tok, lms_error *err)
{
    lms_status st = index_bytes(tok, err);
    if (st != LMS_OK) return st;
    qsort_r(tok->added, tok->n_added, sizeof *tok->added, compare_added, tok->arena);
    size_t k = 0;
    for (int b = 0; b <= 256; b++) {
        while (k < tok->n_added && (unsigned char)tok->arena[tok->added[k].off] < b)
            k++;
        tok->added_first[b] = (uint32_t)k;
    }
    return LMS_OK;
}

void lms_tokenizer_free(lms_tokenizer *tok)
{
    if (!tok) return;
    tok_vocab_free(tok);
    for (int k = 0; k < tok->n_split; k++)
        pcre2_code_free(tok->split[k]);
    for (int k = 0; k < tok->n_norm; k++) {
        free(tok->norm[k].from);
        free(tok->norm[k].to);
    }
    free(tok->added);
    free(tok);
}
