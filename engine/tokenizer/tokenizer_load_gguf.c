/*
 * tokenizer_load_gguf.c — lms_tokenizer_load_gguf: a tokenizer from the
 * tokenizer.ggml.* metadata of a GGUF file (llama.cpp's keys).
 *
 * tokenizer.ggml.model "gpt2" is byte-level BPE, its pre-tokenizer chosen by
 * tokenizer.ggml.pre ("qwen2": the Qwen regex and NFC, as Qwen's
 * tokenizer.json has; "llama-bpe"/"llama3": the Llama 3 regex with
 * ignore_merges; "gpt2"/"default" or absent: GPT-2's). "llama" is
 * SentencePiece-style BPE: merges by rank when tokenizer.ggml.merges is
 * present, else by the merged token's score. Token types 2 (unknown),
 * 3 (control) and 4 (user-defined) are the added tokens, the first two
 * special; type 6 marks SentencePiece's <0xNN> byte tokens.
 */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "gguf.h"
#include "tokenizer_impl.h"

enum { TYPE_NORMAL = 1, TYPE_UNKNOWN = 2, TYPE_CONTROL = 3, TYPE_USER_DEFINED = 4 };

typedef struct {
    const gguf_file *f;
    lms_tokenizer *tok;
    lms_error *err;
} loader;

static lms_status unsupported(loader *L, const char *key, const gguf_str *value)
{
    return lms_fail(L->err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                    "tokenizer: %s \"%.*s\" is not supported", key,
                    (int)(value->len > 64 ? 64 : value->len), value->ptr);
}

static bool str_is(const gguf_str *s, const char *lit)
{
    return s->len == strlen(lit) && !memcmp(s->ptr, lit, s->len);
}

/* The element count of an array key of one of two element types. */
static lms_status array_of(loader *L, const char *key, gguf_value_type t1, gguf_value_type t2,
                           uint64_t *n)
{
    gguf_value_type t;
    lms_status st = gguf_get_array_info(L->f, key, &t, n, L->err);
    if (st != LMS_OK) return st;
    if (t != t1 && t != t2)
        return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: %s has elements of type %d, expected %d", key, (int)t, (int)t1);
    return LMS_OK;
}

static lms_status optional_id(loader *L, const char *key, int32_t *id)
{
    if (!gguf_has_key(L->f, key)) return LMS_OK;
    uint32_t v;
    lms_status st = gguf_get_u32(L->f, key, &v, L->err);
    if (st != LMS_OK) return st;
    if (v >= (uint32_t)L->tok->n_vocab)
        return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: %s = %u is outside the vocabulary of %d", key, v,
                        (int)L->tok->n_vocab);
    *id = (int32_t)v;
    return LMS_OK;
}

static lms_status optional_bool(loader *L, const char *key, bool *v)
{
    return gguf_has_key(L->f, key) ? gguf_get_bool(L->f, key, v, L->err) : LMS_OK;
}

static lms_status load_tokens(loader *L)
{
    lms_tokenizer *tok = L->tok;
    const char *types_key = "tokenizer.ggml.token_type";
    const int32_t *types = NULL;
    if (gguf_has_key(L->f, types_key)) {
        uint64_t n_types;
        lms_status st = array_of(L, types_key, GGUF_TYPE_INT32, GGUF_TYPE_UINT32, &n_types);
        if (st == LMS_OK && n_types != (uint64_t)tok->n_vocab)
            st = lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                          "tokenizer: %s has %llu entries for %d tokens", types_key,
                          (unsigned long long)n_types, (int)tok->n_vocab);
        if (st == LMS_OK) st = gguf_get_array_data(L->f, types_key, (const void **)&types, L->err);
        if (st != LMS_OK) return st;
    }
    for (int32_t id = 0; id < tok->n_vocab; id++) {
        gguf_str text;
        lms_status st =
            gguf_get_array_str(L->f, "tokenizer.ggml.tokens", (uint64_t)id, &text, L->err);
        if (st != LMS_OK) return st;
        int32_t type = TYPE_NORMAL;
        if (types) memcpy(&type, (const char *)types + (size_t)id * 4, 4); /* may be unaligned */
        if (type == TYPE_UNKNOWN || type == TYPE_CONTROL || type == TYPE_USER_DEFINED)
            st = tok_add_added(tok, id, text.ptr, text.len, type != TYPE_USER_DEFINED, false, false,
                               L->err);
        else
            st = tok_vocab_set(tok, id, text.ptr, text.len, false, L->err);
        if (st != LMS_OK) return st;
    }
    return tok_vocab_index(tok, L->err);
}

static lms_status load_merges(loader *L)
{
    const char *key = "tokenizer.ggml.merges";
    uint64_t n;
    lms_status st = array_of(L, key, GGUF_TYPE_STRING, GGUF_TYPE_STRING, &n);
    if (st == LMS_OK && n >= UINT32_MAX)
        st = lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: too many merges");
    if (st == LMS_OK) st = tok_pairs_alloc(L->tok, (size_t)n, L->err);
    for (uint64_t k = 0; st == LMS_OK && k < n; k++) {
        gguf_str m;
        st = gguf_get_array_str(L->f, key, k, &m, L->err);
        if (st != LMS_OK) break;
        const char *space = memchr(m.ptr, ' ', m.len);
        if (!space || memchr(space + 1, ' ', m.len - (size_t)(space - m.ptr) - 1))
            return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                            "tokenizer: %s[%llu] \"%.*s\" is not two tokens separated by one space",
                            key, (unsigned long long)k, (int)(m.len > 64 ? 64 : m.len), m.ptr);
        size_t left_len = (size_t)(space - m.ptr);
        st = tok_pairs_add(L->tok, m.ptr, left_len, space + 1, m.len - left_len - 1, (uint32_t)k,
                           L->err);
    }
    return st;
}

static int by_score_desc(const void *a, const void *b, void *scores)
{
    const float *s = scores;
    float x = s[*(const int32_t *)a], y = s[*(const int32_t *)b];
    return x > y ? -1 : x < y ? 1 : 0;
}

/* SentencePiece merges the adjacent pair whose concatenation has the highest
 * score: rank every token by score, equal scores sharing a rank. */
static lms_status load_score_ranks(loader *L)
{
    lms_tokenizer *tok = L->tok;
    const char *key = "tokenizer.ggml.scores";
    uint64_t n;
    const void *data;
    lms_status st = array_of(L, key, GGUF_TYPE_FLOAT32, GGUF_TYPE_FLOAT32, &n);
    if (st == LMS_OK && n != (uint64_t)tok->n_vocab)
        st = lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                      "tokenizer: %s has %llu entries for %d tokens", key, (unsigned long long)n,
                      (int)tok->n_vocab);
    if (st == LMS_OK) st = gguf_get_array_data(L->f, key, &data, L->err);
    if (st != LMS_OK) return st;
    size_t nv = (size_t)tok->n_vocab;
    float *scores = lms_alloc(nv * sizeof *scores);
    int32_t *order = lms_alloc(nv * sizeof *order);
    tok->score_rank = lms_alloc(nv * sizeof *tok->score_rank);
    if (!scores || !order || !tok->score_rank) {
        lms_free(scores);
        lms_free(order);
        return lms_fail(L->err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    }
    memcpy(scores, data, nv * sizeof *scores);
    for (size_t i = 0; i < nv; i++)
        order[i] = (int32_t)i;
    qsort_r(order, nv, sizeof *order, by_score_desc, scores);
    uint32_t rank = 0;
    for (size_t i = 0; i < nv; i++) {
        if (i > 0 && scores[order[i]] != scores[order[i - 1]]) rank = (uint32_t)i;
        tok->score_rank[order[i]] = rank;
    }
    lms_free(scores);
    lms_free(order);
    tok->merges_by_score = true;
    return LMS_OK;
}

static lms_status setup_byte_level(loader *L)
{
    lms_tokenizer *tok = L->tok;
    gguf_str pre = {"default", 7};
    const char *key = "tokenizer.ggml.pre";
    lms_status st = gguf_has_key(L->f, key) ? gguf_get_str(L->f, key, &pre, L->err) : LMS_OK;
    if (st != LMS_OK) return st;
    const char *regex;
    if (str_is(&pre, "qwen2")) {
        regex = tok_regex_qwen2;
        st = tok_add_norm(tok, TOK_NORM_NFC, NULL, 0, NULL, 0, L->err);
    } else if (str_is(&pre, "llama-bpe") || str_is(&pre, "llama3")) {
        regex = tok_regex_llama3;
        tok->ignore_merges = true;
    } else if (str_is(&pre, "gpt2") || str_is(&pre, "default")) {
        regex = tok_regex_gpt2;
    } else {
        return unsupported(L, key, &pre);
    }
    if (st == LMS_OK) st = tok_add_split_regex(tok, regex, strlen(regex), L->err);
    if (st == LMS_OK) st = load_merges(L);
    return st;
}

static lms_status setup_sentencepiece(loader *L)
{
    lms_tokenizer *tok = L->tok;
    bool space_prefix = true;
    lms_status st = optional_bool(L, "tokenizer.ggml.add_space_prefix", &space_prefix);
    if (st == LMS_OK && space_prefix)
        st = tok_add_norm(tok, TOK_NORM_PREPEND, NULL, 0, TOK_SPIECE_MARK, TOK_SPIECE_MARK_LEN,
                          L->err);
    if (st == LMS_OK)
        st = tok_add_norm(tok, TOK_NORM_REPLACE, " ", 1, TOK_SPIECE_MARK, TOK_SPIECE_MARK_LEN,
                          L->err);
    if (st != LMS_OK) return st;
    tok->decode_strip_spaces = space_prefix ? 1 : 0;
    tok->byte_fallback = true;
    tok->fuse_unk = true;
    return gguf_has_key(L->f, "tokenizer.ggml.merges") ? load_merges(L) : load_score_ranks(L);
}

static lms_status build(loader *L, const gguf_str *model)
{
    lms_tokenizer *tok = L->tok;
    lms_status st = load_tokens(L);
    if (st == LMS_OK) st = optional_id(L, "tokenizer.ggml.unknown_token_id", &tok->unk_id);
    if (st == LMS_OK) st = optional_id(L, "tokenizer.ggml.bos_token_id", &tok->bos_id);
    if (st == LMS_OK) st = optional_id(L, "tokenizer.ggml.eos_token_id", &tok->eos_id);
    if (st != LMS_OK) return st;
    st = str_is(model, "gpt2") ? setup_byte_level(L) : setup_sentencepiece(L);
    /* llama.cpp's defaults: SentencePiece models add BOS, BPE ones do not. */
    bool add_bos = tok->kind == TOK_SENTENCEPIECE, add_eos = false;
    if (st == LMS_OK) st = optional_bool(L, "tokenizer.ggml.add_bos_token", &add_bos);
    if (st == LMS_OK) st = optional_bool(L, "tokenizer.ggml.add_eos_token", &add_eos);
    if (st != LMS_OK) return st;
    if (add_bos && tok->bos_id < 0)
        return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: add_bos_token is set but there is no bos_token_id");
    if (add_eos && tok->eos_id < 0)
        return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: add_eos_token is set but there is no eos_token_id");
    if (add_bos) tok->prefix[tok->n_prefix++] = tok->bos_id;
    if (add_eos) tok->suffix[tok->n_suffix++] = tok->eos_id;
    return tok_finalize(tok, L->err);
}

lms_status lms_tokenizer_load_gguf(const struct gguf_file *f, lms_tokenizer **out, lms_error *err)
{
    if (!f || !out)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL, "tokenizer: missing argument");
    loader L = {f, NULL, err};
    gguf_str model;
    uint64_t n_tokens;
    lms_status st = gguf_get_str(f, "tokenizer.ggml.model", &model, err);
    if (st == LMS_OK && !str_is(&model, "gpt2") && !str_is(&model, "llama"))
        st = unsupported(&L, "tokenizer.ggml.model", &model);
    if (st == LMS_OK)
        st = array_of(&L, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, GGUF_TYPE_STRING, &n_tokens);
    if (st == LMS_OK && (n_tokens == 0 || n_tokens >= INT32_MAX))
        st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                      "tokenizer: tokenizer.ggml.tokens has %llu "
                      "entries",
                      (unsigned long long)n_tokens);
    if (st == LMS_OK)
        st = tok_create(str_is(&model, "gpt2") ? TOK_BYTE_LEVEL : TOK_SENTENCEPIECE,
                        (int32_t)n_tokens, &L.tok, err);
    if (st == LMS_OK) st = build(&L, &model);
    if (st != LMS_OK) {
        lms_tokenizer_free(L.tok);
        return st;
    }
    *out = L.tok;
    return LMS_OK;
}
