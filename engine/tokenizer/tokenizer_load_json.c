/*
 * tokenizer_load_json.c — lms_tokenizer_load_hf: a tokenizer from a Hugging
 * Face tokenizer.json (+ tokenizer_config.json when present).
 *
 * Supported: the BPE model (byte-level, or SentencePiece-style with byte
 * fallback); normalizers NFC, Prepend, Replace (literal) and Sequences of
 * them; pre-tokenizers Split (regex, Isolated), ByteLevel (last) and
 * Sequences; post-processors ByteLevel, TemplateProcessing, Sequences;
 * decoders ByteLevel, or Replace/ByteFallback/Fuse/Strip. Anything else is
 * LMS_ERR_UNSUPPORTED naming the component, and a malformed file is
 * LMS_ERR_FORMAT naming the JSON path at fault.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "tokenizer_impl.h"

typedef struct {
    json_object *root;   /* tokenizer.json */
    json_object *config; /* tokenizer_config.json or NULL */
    lms_tokenizer *tok;
    lms_error *err;
} loader;

static lms_status bad(loader *L, const char *path, const char *what)
{
    return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer.json: %s %s", path, what);
}

static lms_status unsupported(loader *L, const char *what, const char *name)
{
    return lms_fail(L->err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                    "tokenizer.json: %s \"%s\" is not supported", what, name);
}

static json_object *member(json_object *obj, const char *key)
{
    json_object *v = NULL;
    if (obj && json_object_is_type(obj, json_type_object)) json_object_object_get_ex(obj, key, &v);
    return v;
}

static bool is_null(json_object *v)
{
    return !v || json_object_is_type(v, json_type_null);
}

static const char *str_or_null(json_object *v)
{
    return v && json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

static bool flag(json_object *obj, const char *key, bool dflt)
{
    json_object *v = member(obj, key);
    return v && json_object_is_type(v, json_type_boolean) ? json_object_get_boolean(v) : dflt;
}

static const char *type_of(json_object *obj)
{
    const char *t = str_or_null(member(obj, "type"));
    return t ? t : "";
}

/* An id: a JSON integer in [0, INT32_MAX). */
static bool as_id(json_object *v, int32_t *id)
{
    if (!v || !json_object_is_type(v, json_type_int)) return false;
    errno = 0;
    int64_t x = json_object_get_int64(v);
    if (errno || x < 0 || x >= INT32_MAX) return false;
    *id = (int32_t)x;
    return true;
}

static lms_status read_json(const char *dir, const char *name, bool required, json_object **out,
                            lms_error *err)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL, "tokenizer: path too long: %s",
                        dir);
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        if (!required && errno == ENOENT) return LMS_OK;
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "tokenizer: cannot open %s: %s", path,
                        strerror(errno));
    }
    fclose(f);
    json_object *obj = json_object_from_file(path);
    if (!obj)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: %s is not valid JSON: %s",
                        path, json_util_get_last_err());
    if (!json_object_is_type(obj, json_type_object)) {
        json_object_put(obj);
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tokenizer: %s is not a JSON object",
                        path);
    }
    *out = obj;
    return LMS_OK;
}

/* ---- vocabulary ---- */

static lms_status vocab_size(loader *L, json_object *vocab, json_object *added, int32_t *n)
{
    int32_t max = -1, id;
    json_object_object_foreach(vocab, key, val)
    {
        (void)key;
        if (!as_id(val, &id)) return bad(L, "model.vocab", "has a value that is not a token id");
        if (id > max) max = id;
    }
    size_t n_added = added ? json_object_array_length(added) : 0;
    for (size_t k = 0; k < n_added; k++) {
        if (!as_id(member(json_object_array_get_idx(added, k), "id"), &id))
            return bad(L, "added_tokens[].id", "is missing or not a token id");
        if (id > max) max = id;
    }
    *n = max + 1;
    return LMS_OK;
}

static lms_status load_vocab(loader *L, json_object *model, json_object *added)
{
    lms_tokenizer *tok = L->tok;
    json_object *vocab = member(model, "vocab");
    json_object_object_foreach(vocab, key, val)
    {
        int32_t id = 0;
        as_id(val, &id);
        size_t len = strlen(key); /* json-c keys are NUL-terminated */
        lms_status st = tok_vocab_set(tok, id, key, len, false, L->err);
        if (st != LMS_OK) return st;
    }
    size_t n_added = added ? json_object_array_length(added) : 0;
    for (size_t k = 0; k < n_added; k++) {
        json_object *a = json_object_array_get_idx(added, k);
        json_object *content = member(a, "content");
        int32_t id = 0;
        as_id(member(a, "id"), &id);
        if (!content || !json_object_is_type(content, json_type_string))
            return bad(L, "added_tokens[].content", "is missing or not a string");
        /* single_word and normalized are read but, as in the reference, do
         * not change matching (none of the supported models set them). */
        lms_status st = tok_add_added(
            tok, id, json_object_get_string(content), (size_t)json_object_get_string_len(content),
            flag(a, "special", false), flag(a, "lstrip", false), flag(a, "rstrip", false), L->err);
        if (st != LMS_OK) return st;
    }
    return tok_vocab_index(tok, L->err);
}

/* Merges are "left right" strings or, since tokenizers 0.20, [left, right]. */
static lms_status load_merges(loader *L, json_object *merges)
{
    size_t n = json_object_array_length(merges);
    lms_status st = tok_pairs_alloc(L->tok, n, L->err);
    for (size_t k = 0; st == LMS_OK && k < n; k++) {
        json_object *m = json_object_array_get_idx(merges, k);
        const char *left, *right;
        size_t left_len, right_len;
        if (json_object_is_type(m, json_type_string)) {
            left = json_object_get_string(m);
            const char *space = strchr(left, ' ');
            if (!space || strchr(space + 1, ' '))
                return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                                "tokenizer.json: model.merges[%zu] \"%s\" is not two tokens "
                                "separated by one space",
                                k, left);
            left_len = (size_t)(space - left);
            right = space + 1;
            right_len = strlen(right);
        } else if (json_object_is_type(m, json_type_array) && json_object_array_length(m) == 2 &&
                   str_or_null(json_object_array_get_idx(m, 0)) &&
                   str_or_null(json_object_array_get_idx(m, 1))) {
            json_object *l = json_object_array_get_idx(m, 0), *r = json_object_array_get_idx(m, 1);
            left = json_object_get_string(l);
            left_len = (size_t)json_object_get_string_len(l);
            right = json_object_get_string(r);
            right_len = (size_t)json_object_get_string_len(r);
        } else {
            return lms_fail(
                L->err, LMS_ERR_FORMAT, NULL, NULL,
                "tokenizer.json: model.merges[%zu] is neither \"a b\" nor [\"a\", \"b\"]", k);
        }
        st = tok_pairs_add(L->tok, left, left_len, right, right_len, (uint32_t)k, L->err);
    }
    return st;
}

static lms_status load_model(loader *L, json_object *model)
{
    lms_tokenizer *tok = L->tok;
    if (!is_null(member(model, "dropout"))) return unsupported(L, "model.dropout", "non-null");
    const char *affixes[] = {"continuing_subword_prefix", "end_of_word_suffix"};
    for (size_t k = 0; k < 2; k++) {
        const char *v = str_or_null(member(model, affixes[k]));
        if (v && *v) return unsupported(L, affixes[k], v);
    }
    tok->ignore_merges = flag(model, "ignore_merges", false);
    tok->byte_fallback = flag(model, "byte_fallback", false);
    tok->fuse_unk = flag(model, "fuse_unk", false);
    const char *unk = str_or_null(member(model, "unk_token"));
    if (unk) {
        tok->unk_id = tok_find_token(tok, unk, strlen(unk));
        if (tok->unk_id < 0) return bad(L, "model.unk_token", "is not in the vocabulary");
    }
    json_object *merges = member(model, "merges");
    if (!merges || !json_object_is_type(merges, json_type_array))
        return bad(L, "model.merges", "is missing or not an array");
    return load_merges(L, merges);
}

/* ---- pipeline components ---- */

static lms_status load_normalizer(loader *L, json_object *n)
{
    if (is_null(n)) return LMS_OK;
    const char *type = type_of(n);
    if (!strcmp(type, "Sequence")) {
        json_object *list = member(n, "normalizers");
        if (!list || !json_object_is_type(list, json_type_array))
            return bad(L, "normalizer.normalizers", "is missing or not an array");
        for (size_t k = 0; k < json_object_array_length(list); k++) {
            lms_status st = load_normalizer(L, json_object_array_get_idx(list, k));
            if (st != LMS_OK) return st;
        }
        return LMS_OK;
    }
    if (!strcmp(type, "NFC")) return tok_add_norm(L->tok, TOK_NORM_NFC, NULL, 0, NULL, 0, L->err);
    if (!strcmp(type, "Prepend")) {
        json_object *p = member(n, "prepend");
        if (!str_or_null(p)) return bad(L, "normalizer.prepend", "is missing or not a string");
        return tok_add_norm(L->tok, TOK_NORM_PREPEND, NULL, 0, json_object_get_string(p),
                            (size_t)json_object_get_string_len(p), L->err);
    }
    if (!strcmp(type, "Replace")) {
        json_object *from = member(member(n, "pattern"), "String"), *to = member(n, "content");
        if (!str_or_null(from)) return unsupported(L, "normalizer Replace pattern", "non-String");
        if (!str_or_null(to)) return bad(L, "normalizer.content", "is missing or not a string");
        return tok_add_norm(L->tok, TOK_NORM_REPLACE, json_object_get_string(from),
                            (size_t)json_object_get_string_len(from), json_object_get_string(to),
                            (size_t)json_object_get_string_len(to), L->err);
    }
    return unsupported(L, "normalizer", type);
}

static lms_status load_pre_step(loader *L, json_object *p, bool last, bool *byte_level)
{
    const char *type = type_of(p);
    lms_tokenizer *tok = L->tok;
    if (!strcmp(type, "Split")) {
        json_object *regex = member(member(p, "pattern"), "Regex");
        if (!str_or_null(regex)) return unsupported(L, "pre_tokenizer Split pattern", "non-Regex");
        const char *behavior = str_or_null(member(p, "behavior"));
        if (!behavior || strcmp(behavior, "Isolated"))
            return unsupported(L, "pre_tokenizer Split behavior", behavior ? behavior : "(none)");
        if (flag(p, "invert", false)) return unsupported(L, "pre_tokenizer Split", "invert");
        return tok_add_split_regex(tok, json_object_get_string(regex),
                                   (size_t)json_object_get_string_len(regex), L->err);
    }
    if (!strcmp(type, "ByteLevel")) {
        if (!last) return unsupported(L, "pre_tokenizer", "ByteLevel before other pre-tokenizers");
        *byte_level = true;
        tok->add_prefix_space = flag(p, "add_prefix_space", false);
        /* The reference prefixes each piece that reaches ByteLevel; one
         * prefix per section is the same only when nothing split before. */
        if (tok->add_prefix_space && tok->n_split)
            return unsupported(L, "pre_tokenizer", "ByteLevel add_prefix_space after a Split");
        if (flag(p, "use_regex", true))
            return tok_add_split_regex(tok, tok_regex_gpt2, strlen(tok_regex_gpt2), L->err);
        return LMS_OK;
    }
    return unsupported(L, "pre_tokenizer", type);
}

static lms_status load_pre_tokenizer(loader *L, json_object *p, bool *byte_level)
{
    *byte_level = false;
    if (is_null(p)) return LMS_OK;
    if (strcmp(type_of(p), "Sequence")) return load_pre_step(L, p, true, byte_level);
    json_object *list = member(p, "pretokenizers");
    if (!list || !json_object_is_type(list, json_type_array))
        return bad(L, "pre_tokenizer.pretokenizers", "is missing or not an array");
    size_t n = json_object_array_length(list);
    for (size_t k = 0; k < n; k++) {
        lms_status st =
            load_pre_step(L, json_object_array_get_idx(list, k), k + 1 == n, byte_level);
        if (st != LMS_OK) return st;
    }
    return LMS_OK;
}

/* A template special token: its name is looked up as a token, as the
 * reference does, else taken from the template's special_tokens table. */
static lms_status template_id(loader *L, json_object *tmpl, const char *name, int32_t *id)
{
    *id = tok_find_token(L->tok, name, strlen(name));
    if (*id >= 0) return LMS_OK;
    json_object *ids = member(member(member(tmpl, "special_tokens"), name), "ids");
    if (ids && json_object_is_type(ids, json_type_array) && json_object_array_length(ids) == 1 &&
        as_id(json_object_array_get_idx(ids, 0), id) && *id < L->tok->n_vocab)
        return LMS_OK;
    return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                    "tokenizer.json: post_processor special token \"%s\" is not in the vocabulary",
                    name);
}

static lms_status load_template(loader *L, json_object *tmpl)
{
    lms_tokenizer *tok = L->tok;
    json_object *single = member(tmpl, "single");
    if (!single || !json_object_is_type(single, json_type_array))
        return bad(L, "post_processor.single", "is missing or not an array");
    bool after_a = false;
    for (size_t k = 0; k < json_object_array_length(single); k++) {
        json_object *item = json_object_array_get_idx(single, k);
        json_object *special = member(item, "SpecialToken");
        if (member(item, "Sequence")) {
            after_a = true;
            continue;
        }
        const char *name = str_or_null(member(special, "id"));
        if (!name)
            return bad(L, "post_processor.single[]", "is neither a Sequence nor a SpecialToken");
        int32_t id = 0;
        lms_status st = template_id(L, tmpl, name, &id);
        if (st != LMS_OK) return st;
        int *n = after_a ? &tok->n_suffix : &tok->n_prefix;
        if (*n == TOK_MAX_AFFIX) return unsupported(L, "post_processor", "long template");
        (after_a ? tok->suffix : tok->prefix)[(*n)++] = id;
    }
    return LMS_OK;
}

static lms_status load_post_processor(loader *L, json_object *p)
{
    if (is_null(p)) return LMS_OK;
    const char *type = type_of(p);
    if (!strcmp(type, "ByteLevel")) return LMS_OK; /* offsets only */
    if (!strcmp(type, "TemplateProcessing")) return load_template(L, p);
    if (!strcmp(type, "Sequence")) {
        json_object *list = member(p, "processors");
        if (!list || !json_object_is_type(list, json_type_array))
            return bad(L, "post_processor.processors", "is missing or not an array");
        for (size_t k = 0; k < json_object_array_length(list); k++) {
            lms_status st = load_post_processor(L, json_object_array_get_idx(list, k));
            if (st != LMS_OK) return st;
        }
        return LMS_OK;
    }
    return unsupported(L, "post_processor", type);
}

/* Byte-level models decode with ByteLevel; SentencePiece-style ones with
 * Replace(U+2581 -> space), ByteFallback, Fuse and Strip(leading spaces). */
static lms_status load_decoder_step(loader *L, json_object *d, bool byte_level)
{
    const char *type = type_of(d);
    if (!strcmp(type, "ByteLevel") && byte_level) return LMS_OK;
    if (byte_level) return unsupported(L, "decoder of a byte-level model", type);
    if (!strcmp(type, "ByteFallback") || !strcmp(type, "Fuse")) return LMS_OK;
    if (!strcmp(type, "Replace")) {
        const char *from = str_or_null(member(member(d, "pattern"), "String"));
        const char *to = str_or_null(member(d, "content"));
        if (!from || !to || strcmp(from, TOK_SPIECE_MARK) || strcmp(to, " "))
            return unsupported(L, "decoder Replace", "other than U+2581 -> space");
        return LMS_OK;
    }
    if (!strcmp(type, "Strip")) {
        const char *content = str_or_null(member(d, "content"));
        json_object *start = member(d, "start"), *stop = member(d, "stop");
        int32_t n_start = 0, n_stop = 0;
        if (!content || strcmp(content, " ") || (start && !as_id(start, &n_start)) ||
            (stop && !as_id(stop, &n_stop)) || n_stop != 0)
            return unsupported(L, "decoder Strip", "other than leading spaces");
        L->tok->decode_strip_spaces = n_start;
        return LMS_OK;
    }
    return unsupported(L, "decoder", type);
}

static lms_status load_decoder(loader *L, json_object *d, bool byte_level)
{
    if (is_null(d)) return unsupported(L, "decoder", "null");
    if (strcmp(type_of(d), "Sequence")) return load_decoder_step(L, d, byte_level);
    json_object *list = member(d, "decoders");
    if (!list || !json_object_is_type(list, json_type_array))
        return bad(L, "decoder.decoders", "is missing or not an array");
    for (size_t k = 0; k < json_object_array_length(list); k++) {
        lms_status st = load_decoder_step(L, json_object_array_get_idx(list, k), byte_level);
        if (st != LMS_OK) return st;
    }
    return LMS_OK;
}

/* ---- tokenizer_config.json ---- */

/* A token named by the config: a string or an AddedToken object. */
static const char *config_token(json_object *config, const char *key)
{
    json_object *v = member(config, key);
    const char *s = str_or_null(v);
    return s ? s : str_or_null(member(v, "content"));
}

static lms_status config_token_id(loader *L, const char *key, int32_t *id)
{
    const char *name = config_token(L->config, key);
    if (!name) return LMS_OK;
    *id = tok_find_token(L->tok, name, strlen(name));
    if (*id < 0)
        return lms_fail(L->err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer_config.json: %s \"%s\" is not in the vocabulary", key, name);
    return LMS_OK;
}

static lms_status load_config(loader *L)
{
    lms_tokenizer *tok = L->tok;
    if (tok->n_prefix) tok->bos_id = tok->prefix[0];
    if (!L->config) return LMS_OK;
    const char *cls = str_or_null(member(L->config, "tokenizer_class"));
    if (cls && !strncmp(cls, "Llama", 5) && !flag(L->config, "legacy", true))
        return unsupported(L, "tokenizer_config legacy", "false");
    lms_status st = config_token_id(L, "bos_token", &tok->bos_id);
    if (st == LMS_OK) st = config_token_id(L, "eos_token", &tok->eos_id);
    if (st != LMS_OK) return st;
    json_object *extra = member(L->config, "additional_special_tokens");
    size_t n_extra =
        extra && json_object_is_type(extra, json_type_array) ? json_object_array_length(extra) : 0;
    for (size_t k = 0; k < n_extra; k++) {
        json_object *e = json_object_array_get_idx(extra, k);
        const char *name = str_or_null(e) ? str_or_null(e) : str_or_null(member(e, "content"));
        int32_t id = name ? tok_find_token(tok, name, strlen(name)) : -1;
        if (id >= 0) tok->tok_flags[id] |= TOK_SPECIAL;
    }
    /* The template decides what add_special adds; the config's flags only
     * matter for a model whose tokenizer.json has no template. */
    if (!tok->n_prefix && !tok->n_suffix) {
        if (flag(L->config, "add_bos_token", false) && tok->bos_id >= 0)
            tok->prefix[tok->n_prefix++] = tok->bos_id;
        if (flag(L->config, "add_eos_token", false) && tok->eos_id >= 0)
            tok->suffix[tok->n_suffix++] = tok->eos_id;
    }
    return LMS_OK;
}

static lms_status build(loader *L)
{
    json_object *model = member(L->root, "model");
    json_object *added = member(L->root, "added_tokens");
    if (!model) return bad(L, "model", "is missing");
    const char *type = str_or_null(member(model, "type"));
    if (type && strcmp(type, "BPE")) return unsupported(L, "model type", type);
    if (!member(model, "vocab") || !json_object_is_type(member(model, "vocab"), json_type_object))
        return bad(L, "model.vocab", "is missing or not an object");
    if (added && !json_object_is_type(added, json_type_array))
        return bad(L, "added_tokens", "is not an array");
    bool byte_level;
    int32_t n_vocab = 0;
    lms_status st = vocab_size(L, member(model, "vocab"), added, &n_vocab);
    if (st != LMS_OK) return st;
    /* The kind decides how vocabulary texts are stored, so the pre-tokenizer
     * is read first, on a tokenizer created for it. */
    json_object *pre = member(L->root, "pre_tokenizer");
    bool has_byte_level = false;
    json_object *steps = strcmp(type_of(pre), "Sequence") ? NULL : member(pre, "pretokenizers");
    if (!strcmp(type_of(pre), "ByteLevel")) has_byte_level = true;
    for (size_t k = 0; steps && k < json_object_array_length(steps); k++)
        has_byte_level |= !strcmp(type_of(json_object_array_get_idx(steps, k)), "ByteLevel");
    st = tok_create(has_byte_level ? TOK_BYTE_LEVEL : TOK_SENTENCEPIECE, n_vocab, &L->tok, L->err);
    if (st == LMS_OK) st = load_pre_tokenizer(L, pre, &byte_level);
    if (st == LMS_OK) st = load_vocab(L, model, added);
    if (st == LMS_OK) st = load_model(L, model);
    if (st == LMS_OK) st = load_normalizer(L, member(L->root, "normalizer"));
    if (st == LMS_OK) st = load_post_processor(L, member(L->root, "post_processor"));
    if (st == LMS_OK) st = load_decoder(L, member(L->root, "decoder"), byte_level);
    if (st == LMS_OK) st = load_config(L);
    if (st == LMS_OK) st = tok_finalize(L->tok, L->err);
    return st;
}

lms_status lms_tokenizer_load_hf(const char *dir, lms_tokenizer **out, lms_error *err)
{
    if (!dir || !out)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL, "tokenizer: missing argument");
    loader L = {NULL, NULL, NULL, err};
    lms_status st = read_json(dir, "tokenizer.json", true, &L.root, err);
    if (st == LMS_OK) st = read_json(dir, "tokenizer_config.json", false, &L.config, err);
    if (st == LMS_OK) st = build(&L);
    json_object_put(L.root);
    json_object_put(L.config);
    if (st != LMS_OK) {
        lms_tokenizer_free(L.tok);
        return st;
    }
    *out = L.tok;
    return LMS_OK;
}
