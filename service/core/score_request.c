/*
 * score_request.c — proto inputs → owned token arrays and an
 * lms_score_request (see score_request.h).
 */
#include "score_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics.h"

static lms_status algorithm_from_proto(Lmscore__V1__Algorithm a, lms_algorithm *out, lms_error *err)
{
    switch (a) {
    case LMSCORE__V1__ALGORITHM__ALGORITHM_UNSPECIFIED:
        *out = LMS_ALGO_AUTO;
        return LMS_OK;
    case LMSCORE__V1__ALGORITHM__ALGORITHM_SERIAL:
        *out = LMS_ALGO_SERIAL;
        return LMS_OK;
    case LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_DENSE:
        *out = LMS_ALGO_PACKED_DENSE;
        return LMS_OK;
    case LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_SEGMENT:
        *out = LMS_ALGO_PACKED_SEGMENT;
        return LMS_OK;
    case LMSCORE__V1__ALGORITHM__ALGORITHM_PREFILL_EXTEND:
        *out = LMS_ALGO_PREFILL_EXTEND;
        return LMS_OK;
    default:
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "unknown_algorithm", "algorithm",
                        "algorithm: unknown value %d", (int)a);
    }
}

Lmscore__V1__Algorithm score_algorithm_to_proto(lms_algorithm algo)
{
    switch (algo) {
    case LMS_ALGO_SERIAL:
        return LMSCORE__V1__ALGORITHM__ALGORITHM_SERIAL;
    case LMS_ALGO_PACKED_DENSE:
        return LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_DENSE;
    case LMS_ALGO_PACKED_SEGMENT:
        return LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_SEGMENT;
    case LMS_ALGO_PREFILL_EXTEND:
        return LMSCORE__V1__ALGORITHM__ALGORITHM_PREFILL_EXTEND;
    case LMS_ALGO_AUTO:
        break;
    }
    return LMSCORE__V1__ALGORITHM__ALGORITHM_UNSPECIFIED;
}

lms_status score_text_check(const char *text, int64_t max_bytes, const char *field, lms_error *err)
{
    size_t len = strnlen(text, (size_t)max_bytes + 1);
    if ((int64_t)len <= max_bytes) return LMS_OK;
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "text_too_long", field,
                    "%s: %zu bytes: the limit is %lld bytes (--max-text-bytes); a text that "
                    "long is not tokenized",
                    field, strlen(text), (long long)max_bytes);
}

/* Copies or tokenizes one input into an owned array (never NULL on
 * success, so an empty input still owns a buffer to free). */
static lms_status input_tokens(const lms_engine *e, const Lmscore__V1__Input *in, bool text_inputs,
                               bool add_special, int64_t max_text_bytes, const char *field,
                               int32_t **ids, int32_t *len, lms_error *err)
{
    if (!in) /* only a query can be absent: a message field has presence */
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "missing_field", field,
                        "%s: missing, and required", field);
    if (in->kind_case == LMSCORE__V1__INPUT__KIND__NOT_SET)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "missing_input", field,
                        "%s: set either text or token_ids", field);
    bool is_text = in->kind_case == LMSCORE__V1__INPUT__KIND_TEXT;
    if (is_text != text_inputs)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "mixed_input_types", field,
                        "%s: is %s but the query is %s; all inputs of a request must be of "
                        "one kind",
                        field, is_text ? "text" : "token_ids", text_inputs ? "text" : "token_ids");
    if (is_text) {
        lms_status st = score_text_check(in->text, max_text_bytes, field, err);
        if (st != LMS_OK) return st;
        const lms_tokenizer *tok = lms_engine_tokenizer(e);
        if (!tok)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "no_tokenizer", field,
                            "%s: the model has no tokenizer; send token_ids", field);
        size_t n = 0;
        st = lms_tokenizer_encode(tok, in->text, strlen(in->text), add_special, ids, &n, err);
        if (st != LMS_OK) return lms_fail_context(err, "%s", field);
        if (!*ids && !(*ids = malloc(sizeof **ids)))
            return lms_fail(err, LMS_ERR_NOMEM, NULL, field, "out of memory");
        *len = (int32_t)n;
        return LMS_OK;
    }
    size_t n = in->token_ids ? in->token_ids->n_ids : 0;
    *ids = malloc((n ? n : 1) * sizeof **ids);
    if (!*ids) return lms_fail(err, LMS_ERR_NOMEM, NULL, field, "out of memory");
    if (n) memcpy(*ids, in->token_ids->ids, n * sizeof **ids);
    *len = (int32_t)n;
    return LMS_OK;
}

/* The label ids of f into an owned array (*ids, *n), never NULL on success. */
static lms_status resolve_labels(const lms_engine *e, const score_header_fields *f,
                                 int64_t max_text_bytes, int32_t **ids, int32_t *n_ids,
                                 lms_error *err)
{
    if (f->n_label_token_ids && f->n_label_texts)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "mixed_input_types", "label_texts",
                        "label_texts: give either label_token_ids or label_texts, not both");
    size_t n = f->n_label_texts ? f->n_label_texts : f->n_label_token_ids;
    int32_t *out = malloc((n ? n : 1) * sizeof *out);
    if (!out) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    *ids = out;
    *n_ids = (int32_t)n;
    if (!f->n_label_texts) {
        if (n) memcpy(out, f->label_token_ids, n * sizeof *out);
        return LMS_OK;
    }
    const lms_tokenizer *tok = lms_engine_tokenizer(e);
    if (!tok)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "no_tokenizer", "label_texts",
                        "label_texts: the model has no tokenizer; send label_token_ids");
    for (size_t i = 0; i < n; i++) {
        const char *text = f->label_texts[i];
        char field[48];
        snprintf(field, sizeof field, "label_texts[%zu]", i);
        lms_status st = score_text_check(text, max_text_bytes, field, err);
        if (st != LMS_OK) return st;
        if (lms_tokenizer_single_token(tok, text, strlen(text), &out[i], err) != LMS_OK) {
            /* name the request field, whatever the tokenizer called it */
            if (err) snprintf(err->field, sizeof err->field, "%s", field);
            return lms_fail_context(err, "%s", field);
        }
    }
    return LMS_OK;
}

static lms_status prepare_suffix(const lms_engine *e, const Lmscore__V1__Input *in, score_header *h,
                                 lms_error *err)
{
    if (!in) return LMS_OK;
    lms_status st = input_tokens(e, in, h->text_inputs, false, h->max_text_bytes, "item_suffix",
                                 &h->suffix, &h->n_suffix, err);
    if (st == LMS_OK && h->text_inputs && !(h->suffix_text = strdup(in->text)))
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, "item_suffix", "out of memory");
    return st;
}

static lms_status prepare_truncation(const lms_engine *e, const Lmscore__V1__Truncation *t,
                                     score_header *h, lms_error *err)
{
    if (t->max_item_tokens < 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "invalid_truncation",
                        "truncation.max_item_tokens",
                        "truncation.max_item_tokens: %d; give 0 (none) or a positive count",
                        t->max_item_tokens);
    if (t->max_sequence_tokens < 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "invalid_truncation",
                        "truncation.max_sequence_tokens",
                        "truncation.max_sequence_tokens: %d; give 0 (the server's limit) or a "
                        "positive count",
                        t->max_sequence_tokens);
    if (t->side != LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_RIGHT &&
        t->side != LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_LEFT)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "invalid_truncation", "truncation.side",
                        "truncation.side: unknown value %d", (int)t->side);
    int32_t limit = lms_engine_options_get(e)->max_sequence_tokens;
    h->truncate = true;
    h->keep_end = t->side == LMSCORE__V1__TRUNCATION_SIDE__TRUNCATION_SIDE_LEFT;
    h->max_item_tokens = t->max_item_tokens;
    h->max_sequence_tokens = t->max_sequence_tokens > 0 && t->max_sequence_tokens < limit
                                 ? t->max_sequence_tokens
                                 : limit;
    return LMS_OK;
}

lms_status score_header_prepare(const lms_engine *e, const score_header_fields *f,
                                int64_t max_text_bytes, score_header *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    out->max_text_bytes = max_text_bytes;
    lms_score_request *req = &out->request;
    req->apply_softmax = f->apply_softmax;
    req->item_first = f->item_first;
    out->return_logprobs = f->return_logprobs;
    out->text_inputs = f->query && f->query->kind_case == LMSCORE__V1__INPUT__KIND_TEXT;
    int32_t *labels = NULL, *query = NULL;
    lms_status st = algorithm_from_proto(f->algorithm, &req->algorithm, err);
    if (st == LMS_OK) st = resolve_labels(e, f, max_text_bytes, &labels, &req->n_labels, err);
    req->label_ids = labels;
    if (st == LMS_OK)
        st = input_tokens(e, f->query, out->text_inputs, true, max_text_bytes, "query", &query,
                          &req->query.len, err);
    req->query.ids = query;
    if (st == LMS_OK) st = prepare_suffix(e, f->item_suffix, out, err);
    if (st == LMS_OK && f->truncation) st = prepare_truncation(e, f->truncation, out, err);
    if (st != LMS_OK) score_header_free(out);
    return st;
}

void score_header_free(score_header *h)
{
    free((void *)h->request.query.ids);
    free((void *)h->request.label_ids);
    free(h->suffix_text);
    free(h->suffix);
    h->request.query.ids = h->request.label_ids = NULL;
    h->suffix_text = NULL;
    h->suffix = NULL;
    h->n_suffix = 0;
}

/* in's text with h's suffix text after it, as one input (a view: only the
 * text is allocated, into *joined). */
static lms_status with_suffix_text(const score_header *h, const Lmscore__V1__Input *in,
                                   const char *field, Lmscore__V1__Input *out, char **joined,
                                   lms_error *err)
{
    *out = *in;
    *joined = NULL;
    if (!h->suffix_text || in->kind_case != LMSCORE__V1__INPUT__KIND_TEXT) return LMS_OK;
    lms_status st = score_text_check(in->text, h->max_text_bytes, field, err);
    if (st != LMS_OK) return st;
    size_t a = strlen(in->text), b = strlen(h->suffix_text);
    if (!(*joined = malloc(a + b + 1)))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, field, "out of memory");
    memcpy(*joined, in->text, a);
    memcpy(*joined + a, h->suffix_text, b + 1);
    out->text = *joined;
    return LMS_OK;
}

/* The tokens of the item alone (without the suffix) within *ids: a prefix
 * of them when they end with the suffix's tokens (the usual case: the
 * tokenizer merges nothing across the seam), else the item tokenized by
 * itself into *own. */
static lms_status own_tokens(const lms_engine *e, const score_header *h,
                             const Lmscore__V1__Input *in, const int32_t *ids, int32_t len,
                             const char *field, const int32_t **doc, int32_t *n_doc, int32_t **own,
                             lms_error *err)
{
    *own = NULL;
    if (h->n_suffix == 0 ||
        (len >= h->n_suffix &&
         memcmp(ids + len - h->n_suffix, h->suffix, (size_t)h->n_suffix * sizeof *ids) == 0)) {
        *doc = ids;
        *n_doc = len - h->n_suffix;
        return LMS_OK;
    }
    lms_status st =
        input_tokens(e, in, h->text_inputs, false, h->max_text_bytes, field, own, n_doc, err);
    *doc = *own;
    return st;
}

/* The most tokens item tokens may keep under h's truncation; -1 when the
 * query and suffix alone leave no room (the engine then refuses the item
 * as sequence_too_long). */
static int64_t item_budget(const lms_engine *e, const score_header *h)
{
    const lms_score_request *r = &h->request;
    int64_t fixed = (int64_t)r->query.len + h->n_suffix +
                    (lms_engine_options_get(e)->delimiter >= 0 && !r->item_first ? 1 : 0);
    int64_t room = h->max_sequence_tokens - fixed;
    if (room < 0) return -1;
    return h->max_item_tokens > 0 && h->max_item_tokens < room ? h->max_item_tokens : room;
}

/* One item's tokens (and the suffix's) into *ids, cut to h's budget when
 * truncating (*kept and *dropped then say what was cut). */
static lms_status item_tokens(const lms_engine *e, const score_header *h,
                              const Lmscore__V1__Input *in, const char *field, int32_t **ids,
                              int32_t *len, int32_t *kept, int32_t *dropped, lms_error *err)
{
    *dropped = 0;
    if (in && in->kind_case == LMSCORE__V1__INPUT__KIND_TOKEN_IDS && h->n_suffix) {
        /* ids then the suffix's: no tokenizer to cross the seam */
        lms_status st =
            input_tokens(e, in, h->text_inputs, false, h->max_text_bytes, field, ids, len, err);
        if (st != LMS_OK) return st;
        int32_t *grown = realloc(*ids, ((size_t)*len + (size_t)h->n_suffix) * sizeof **ids);
        if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, field, "out of memory");
        memcpy(grown + *len, h->suffix, (size_t)h->n_suffix * sizeof *grown);
        *ids = grown;
        *len += h->n_suffix;
    } else {
        Lmscore__V1__Input joined_in;
        char *joined = NULL;
        lms_status st = in ? with_suffix_text(h, in, field, &joined_in, &joined, err) : LMS_OK;
        if (st == LMS_OK)
            st = input_tokens(e, in ? &joined_in : NULL, h->text_inputs, false, h->max_text_bytes,
                              field, ids, len, err);
        free(joined);
        if (st != LMS_OK) return st;
    }
    *kept = *len - h->n_suffix;
    if (!h->truncate) return LMS_OK;
    const int32_t *doc;
    int32_t n_doc, *own;
    lms_status st = own_tokens(e, h, in, *ids, *len, field, &doc, &n_doc, &own, err);
    if (st != LMS_OK) return st;
    int64_t budget = item_budget(e, h);
    *kept = n_doc;
    if (budget < 0 || n_doc <= budget) {
        free(own);
        return LMS_OK;
    }
    int32_t keep = (int32_t)budget;
    int32_t *cut = malloc(((size_t)keep + (size_t)h->n_suffix + 1) * sizeof *cut);
    if (!cut) {
        free(own);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, field, "out of memory");
    }
    if (keep) memcpy(cut, doc + (h->keep_end ? n_doc - keep : 0), (size_t)keep * sizeof *cut);
    if (h->n_suffix) memcpy(cut + keep, h->suffix, (size_t)h->n_suffix * sizeof *cut);
    free(own);
    free(*ids);
    *ids = cut;
    *len = keep + h->n_suffix;
    *kept = keep;
    *dropped = n_doc - keep;
    return LMS_OK;
}

lms_status score_items_prepare(const lms_engine *e, const score_header *h,
                               Lmscore__V1__Input *const *items, size_t n_items, int64_t index_base,
                               score_items *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    size_t n = n_items ? n_items : 1;
    out->items = calloc(n, sizeof *out->items);
    if (h->truncate) {
        out->kept = calloc(n, sizeof *out->kept);
        out->dropped = calloc(n, sizeof *out->dropped);
    }
    if (!out->items || (h->truncate && (!out->kept || !out->dropped))) {
        score_items_free(out);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    int64_t n_dropped = 0;
    for (size_t i = 0; i < n_items; i++) {
        char field[48];
        snprintf(field, sizeof field, "items[%lld]", (long long)(index_base + (int64_t)i));
        int32_t *ids = NULL;
        int32_t len = 0, kept = 0, dropped = 0;
        lms_status st = item_tokens(e, h, items[i], field, &ids, &len, &kept, &dropped, err);
        if (st != LMS_OK) {
            free(ids);
            score_items_free(out);
            return st;
        }
        out->items[i] = (lms_tokens){.ids = ids, .len = len};
        out->n_items = (int32_t)i + 1;
        out->n_tokens += len;
        if (h->truncate) {
            out->kept[i] = kept;
            out->dropped[i] = dropped;
            out->n_truncated += dropped > 0;
            n_dropped += dropped;
        }
    }
    if (out->n_truncated) metrics_truncated(out->n_truncated, n_dropped);
    return LMS_OK;
}

void score_items_free(score_items *it)
{
    for (int32_t i = 0; i < it->n_items; i++)
        free((void *)it->items[i].ids);
    free(it->items);
    free(it->kept);
    free(it->dropped);
    it->items = NULL;
    it->kept = it->dropped = NULL;
    it->n_items = 0;
}

lms_score_request score_request_with_items(const score_header *h, const score_items *it)
{
    lms_score_request req = h->request;
    req.items = it->items;
    req.n_items = it->n_items;
    return req;
}
