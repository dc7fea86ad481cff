/*
 * vocab.c — tokenizer.json / tokenizer_config.json to tokenizer.ggml.*
 * metadata, following convert_hf_to_gguf.py (see mm_vocab.h).
 */
#include "mm_vocab.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_TOKEN_ID (1 << 24)

typedef struct {
    json_object *vocab; /* tokenizer.json model.vocab: text -> id */
    json_object *added; /* tokenizer.json added_tokens */
} token_index;

static lms_status load_json(const char *dir, const char *name, json_object **out, lms_error *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    *out = json_object_from_file(path);
    if (!*out)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "cannot read %s: %s", path,
                        json_util_get_last_err());
    return LMS_OK;
}

static json_object *member(json_object *obj, const char *key, json_type type)
{
    json_object *v = NULL;
    if (!obj || !json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, type))
        return NULL;
    return v;
}

static lms_status set_token(mm_vocab *v, int64_t id, const char *text, lms_error *err)
{
    if (id < 0 || id >= v->n_tokens)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer.json: token '%s' has id %lld outside [0, %d)", text,
                        (long long)id, v->n_tokens);
    if (v->tokens[id]) {
        if (strcmp(v->tokens[id], text) == 0) return LMS_OK;
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer.json: id %lld is both '%s' and '%s'", (long long)id,
                        v->tokens[id], text);
    }
    v->tokens[id] = strdup(text);
    if (!v->tokens[id]) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for tokens");
    return LMS_OK;
}

/* convert_hf_to_gguf's does_token_look_special: added tokens that ought to be
 * control tokens even when not marked special. */
static bool looks_special(const char *t)
{
    static const char *const named[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++)
        if (strcmp(t, named[i]) == 0) return true;
    const size_t n = strlen(t);
    const struct {
        const char *open, *close;
    } pairs[] = {{"<|", "|>"}, {"<\xef\xbd\x9c", "\xef\xbd\x9c>"}, {"<unused", ">"}};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        const size_t lo = strlen(pairs[i].open), lc = strlen(pairs[i].close);
        if (n >= lo + lc && strncmp(t, pairs[i].open, lo) == 0 &&
            strcmp(t + n - lc, pairs[i].close) == 0)
            return true;
    }
    return false;
}

static bool is_byte_piece(const char *t)
{
    static const char hex[] = "0123456789abcdefABCDEF";
    return strlen(t) == 6 && strncmp(t, "<0x", 3) == 0 && t[5] == '>' && strchr(hex, t[3]) &&
           strchr(hex, t[4]);
}

static int64_t token_id(const token_index *ix, const char *text)
{
    json_object *id = NULL;
    if (json_object_object_get_ex(ix->vocab, text, &id)) return json_object_get_int64(id);
    const size_t n = ix->added ? json_object_array_length(ix->added) : 0;
    for (size_t i = 0; i < n; i++) {
        json_object *tok = json_object_array_get_idx(ix->added, i);
        json_object *content = member(tok, "content", json_type_string);
        json_object *tid = member(tok, "id", json_type_int);
        if (content && tid && strcmp(json_object_get_string(content), text) == 0)
            return json_object_get_int64(tid);
    }
    return -1;
}

/* tokenizer_config.json names special tokens either as a string or as an
 * AddedToken object {"content": ...}. */
static const char *special_text(json_object *config, const char *key)
{
    json_object *v = NULL;
    if (!json_object_object_get_ex(config, key, &v) || !v) return NULL;
    if (json_object_is_type(v, json_type_string)) return json_object_get_string(v);
    json_object *content = member(v, "content", json_type_string);
    return content ? json_object_get_string(content) : NULL;
}

static lms_status special_id(const token_index *ix, json_object *config, const char *key,
                             const char *fallback, int32_t *out, lms_error *err)
{
    const char *text = special_text(config, key);
    if (!text && fallback && *fallback) text = fallback;
    *out = -1;
    if (!text) return LMS_OK;
    int64_t id = token_id(ix, text);
    if (id < 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer_config.json: %s '%s' is not a token", key, text);
    *out = (int32_t)id;
    return LMS_OK;
}

/* Whether the tokenizer adds a special token before (first) or after the
 * sequence: tokenizer_config.json's add_bos_token / add_eos_token when set,
 * else what tokenizer.json's TemplateProcessing post-processor does. */
static bool adds_special(json_object *tokenizer, json_object *config, const char *config_key,
                         bool first)
{
    json_object *flag = member(config, config_key, json_type_boolean);
    if (flag) return json_object_get_boolean(flag);
    json_object *post = member(tokenizer, "post_processor", json_type_object);
    json_object *procs = member(post, "processors", json_type_array);
    const size_t n = procs ? json_object_array_length(procs) : 1;
    for (size_t i = 0; i < n; i++) {
        json_object *p = procs ? json_object_array_get_idx(procs, i) : post;
        json_object *type = member(p, "type", json_type_string);
        json_object *single = member(p, "single", json_type_array);
        if (!type || strcmp(json_object_get_string(type), "TemplateProcessing") != 0 || !single ||
            json_object_array_length(single) == 0)
            continue;
        size_t at = first ? 0 : json_object_array_length(single) - 1;
        return member(json_object_array_get_idx(single, at), "SpecialToken", json_type_object);
    }
    return false;
}

/* Merges come as "left right" strings or, in newer files, [left, right]. */
static lms_status merge_text(json_object *m, char **out, lms_error *err)
{
    if (json_object_is_type(m, json_type_string)) {
        *out = strdup(json_object_get_string(m));
    } else if (json_object_is_type(m, json_type_array) && json_object_array_length(m) == 2 &&
               json_object_is_type(json_object_array_get_idx(m, 0), json_type_string) &&
               json_object_is_type(json_object_array_get_idx(m, 1), json_type_string)) {
        const char *l = json_object_get_string(json_object_array_get_idx(m, 0));
        const char *r = json_object_get_string(json_object_array_get_idx(m, 1));
        size_t n = strlen(l) + strlen(r) + 2;
        *out = malloc(n);
        if (*out) snprintf(*out, n, "%s %s", l, r);
    } else {
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer.json: a merge is neither \"a b\" nor [a, b]");
    }
    return *out ? LMS_OK : lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for merges");
}

static lms_status load_merges(mm_vocab *v, json_object *merges, lms_error *err)
{
    const size_t n = json_object_array_length(merges);
    v->merges = calloc(n ? n : 1, sizeof *v->merges);
    if (!v->merges) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for merges");
    for (size_t i = 0; i < n; i++) {
        lms_status st = merge_text(json_object_array_get_idx(merges, i), &v->merges[i], err);
        if (st != LMS_OK) return st;
        v->n_merges++;
    }
    return LMS_OK;
}

/* SentencePiece tokenizer.json files carry merges, not the model's scores.
 * llama.cpp's SPM tokenizer merges the pair whose result has the highest
 * score, so scores that reproduce the merge order are: -(rank of the first
 * merge producing the piece); other normal pieces (single characters) rank
 * after all merges; control, unknown and byte pieces score 0. */
static lms_status spm_scores(mm_vocab *v, const token_index *ix, json_object *merges,
                             lms_error *err)
{
    v->scores = malloc((size_t)v->n_tokens * sizeof *v->scores);
    if (!v->scores) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for scores");
    const int64_t n_merges = merges ? (int64_t)json_object_array_length(merges) : 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        switch (v->types[id]) {
        case MM_TOKEN_NORMAL:
            v->scores[id] = -(float)(n_merges + id);
            break;
        case MM_TOKEN_UNUSED:
            v->scores[id] = -1000.0f;
            break;
        default:
            v->scores[id] = 0.0f;
            break;
        }
    }
    for (int64_t r = n_merges - 1; r >= 0; r--) { /* backwards: the first rank wins */
        char *text = NULL;
        lms_status st = merge_text(json_object_array_get_idx(merges, (size_t)r), &text, err);
        if (st != LMS_OK) return st;
        char *space = strchr(text, ' ');
        if (space) memmove(space, space + 1, strlen(space));
        int64_t id = token_id(ix, text);
        free(text);
        if (id >= 0 && id < v->n_tokens && v->types[id] == MM_TOKEN_NORMAL)
            v->scores[id] = -(float)r;
    }
    return LMS_OK;
}

static lms_status classify(mm_vocab *v, const bool *added, const bool *special, lms_error *err)
{
    const bool spm = strcmp(v->model, "llama") == 0;
    for (int32_t id = 0; id < v->n_tokens; id++) {
        if (!v->tokens[id]) {
            char pad[32];
            snprintf(pad, sizeof pad, "[PAD%d]", id);
            v->tokens[id] = strdup(pad);
            if (!v->tokens[id])
                return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for tokens");
            v->types[id] = MM_TOKEN_UNUSED;
        } else if (spm && id == v->unk_id) {
            v->types[id] = MM_TOKEN_UNKNOWN;
        } else if (added[id]) {
            v->types[id] = special[id] || looks_special(v->tokens[id]) ? MM_TOKEN_CONTROL
                                                                       : MM_TOKEN_USER_DEFINED;
        } else if (spm && is_byte_piece(v->tokens[id])) {
            v->types[id] = MM_TOKEN_BYTE;
        } else {
            v->types[id] = MM_TOKEN_NORMAL;
        }
    }
    return LMS_OK;
}

static lms_status read_tokens(mm_vocab *v, const token_index *ix, int32_t vocab_size, bool **added,
                              bool **special, lms_error *err)
{
    int64_t max_id = -1;
    json_object_object_foreach(ix->vocab, text, id_obj)
    {
        if (!json_object_is_type(id_obj, json_type_int))
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "tokenizer.json: id of '%s' is not an integer", text);
        int64_t id = json_object_get_int64(id_obj);
        if (id > max_id) max_id = id;
    }
    const size_t n_added = ix->added ? json_object_array_length(ix->added) : 0;
    for (size_t i = 0; i < n_added; i++) {
        json_object *id = member(json_object_array_get_idx(ix->added, i), "id", json_type_int);
        if (!id) return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "added token without an id");
        if (json_object_get_int64(id) > max_id) max_id = json_object_get_int64(id);
    }
    if (max_id < 0 || max_id >= MAX_TOKEN_ID)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer.json: token ids must lie in [0, %d)", MAX_TOKEN_ID);
    v->n_defined = (int32_t)max_id + 1;
    v->n_tokens = vocab_size ? vocab_size : v->n_defined;
    if (v->n_tokens < v->n_defined)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "vocab_too_small", "vocab-size",
                        "vocab size %d is smaller than the tokenizer's %d ids", v->n_tokens,
                        v->n_defined);
    v->tokens = calloc((size_t)v->n_tokens, sizeof *v->tokens);
    v->types = calloc((size_t)v->n_tokens, sizeof *v->types);
    *added = calloc((size_t)v->n_tokens, sizeof **added);
    *special = calloc((size_t)v->n_tokens, sizeof **special);
    if (!v->tokens || !v->types || !*added || !*special)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %d tokens", v->n_tokens);
    json_object_object_foreach(ix->vocab, key, val)
    {
        lms_status st = set_token(v, json_object_get_int64(val), key, err);
        if (st != LMS_OK) return st;
    }
    for (size_t i = 0; i < n_added; i++) {
        json_object *tok = json_object_array_get_idx(ix->added, i);
        json_object *content = member(tok, "content", json_type_string);
        if (!content)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "added token without content");
        int64_t id = json_object_get_int64(member(tok, "id", json_type_int));
        lms_status st = set_token(v, id, json_object_get_string(content), err);
        if (st != LMS_OK) return st;
        json_object *is_special = member(tok, "special", json_type_boolean);
        (*added)[id] = true;
        (*special)[id] = is_special && json_object_get_boolean(is_special);
    }
    return LMS_OK;
}

static lms_status build(mm_vocab *v, json_object *tokenizer, json_object *config,
                        int32_t vocab_size, const char *fallback_bos, lms_error *err)
{
    json_object *model = member(tokenizer, "model", json_type_object);
    json_object *type = member(model, "type", json_type_string);
    if (!type || strcmp(json_object_get_string(type), "BPE") != 0)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "tokenizer.json: only BPE tokenizers are supported");
    const token_index ix = {member(model, "vocab", json_type_object),
                            member(tokenizer, "added_tokens", json_type_array)};
    if (!ix.vocab)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer.json: no model.vocab");
    json_object *byte_fallback = member(model, "byte_fallback", json_type_boolean);
    v->model = byte_fallback && json_object_get_boolean(byte_fallback) ? "llama" : "gpt2";

    bool *added = NULL, *special = NULL;
    lms_status st = read_tokens(v, &ix, vocab_size, &added, &special, err);
    if (st == LMS_OK) st = special_id(&ix, config, "bos_token", fallback_bos, &v->bos_id, err);
    if (st == LMS_OK) st = special_id(&ix, config, "eos_token", NULL, &v->eos_id, err);
    if (st == LMS_OK) st = special_id(&ix, config, "pad_token", NULL, &v->pad_id, err);
    if (st == LMS_OK) {
        json_object *unk = member(model, "unk_token", json_type_string);
        st = special_id(&ix, config, "unk_token", unk ? json_object_get_string(unk) : NULL,
                        &v->unk_id, err);
    }
    if (st == LMS_OK) st = classify(v, added, special, err);
    free(added);
    free(special);
    if (st != LMS_OK) return st;

    json_object *merges = member(model, "merges", json_type_array);
    if (strcmp(v->model, "llama") == 0) {
        st = spm_scores(v, &ix, merges, err);
    } else {
        if (!merges) return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer.json: no merges");
        st = load_merges(v, merges, err);
    }
    v->add_bos = adds_special(tokenizer, config, "add_bos_token", true);
    v->add_eos = adds_special(tokenizer, config, "add_eos_token", false);
    return st;
}

lms_status mm_vocab_load(const char *dir, int32_t vocab_size, const char *fallback_bos,
                         mm_vocab **out, lms_error *err)
{
    *out = NULL;
    json_object *tokenizer = NULL, *config = NULL;
    lms_status st = load_json(dir, "tokenizer.json", &tokenizer, err);
    if (st == LMS_OK) st = load_json(dir, "tokenizer_config.json", &config, err);
    mm_vocab *v = st == LMS_OK ? calloc(1, sizeof *v) : NULL;
    if (st == LMS_OK && !v) st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    if (st == LMS_OK) st = build(v, tokenizer, config, vocab_size, fallback_bos, err);
    json_object_put(tokenizer);
    json_object_put(config);
    if (st != LMS_OK) {
        mm_vocab_free(v);
        return lms_fail_context(err, "tokenizer in %s", dir);
    }
    *out = v;
    return LMS_OK;
}

void mm_vocab_free(mm_vocab *v)
{
    if (!v) return;
    for (int32_t i = 0; v->tokens && i < v->n_tokens; i++)
        free(v->tokens[i]);
    for (int64_t i = 0; i < v->n_merges; i++)
        free(v->merges[i]);
    free(v->tokens);
    free(v->types);
    free(v->scores);
    free(v->merges);
    free(v);
}
