/*
 * score_request.c — proto inputs → owned token arrays and an
 * lms_score_request (see score_request.h).
 */
#include "score_request.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    if (st != LMS_OK) score_header_free(out);
    return st;
}

void score_header_free(score_header *h)
{
    free((void *)h->request.query.ids);
    free((void *)h->request.label_ids);
    h->request.query.ids = h->request.label_ids = NULL;
}

lms_status score_items_prepare(const lms_engine *e, const score_header *h,
                               Lmscore__V1__Input *const *items, size_t n_items, int64_t index_base,
                               score_items *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    out->items = calloc(n_items ? n_items : 1, sizeof *out->items);
    if (!out->items) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    for (size_t i = 0; i < n_items; i++) {
        char field[48];
        snprintf(field, sizeof field, "items[%lld]", (long long)(index_base + (int64_t)i));
        int32_t *ids = NULL;
        int32_t len = 0;
        lms_status st = input_tokens(e, items[i], h->text_inputs, false, h->max_text_bytes, field,
                                     &ids, &len, err);
        if (st != LMS_OK) {
            score_items_free(out);
            return st;
        }
        out->items[i] = (lms_tokens){.ids = ids, .len = len};
        out->n_items = (int32_t)i + 1;
        out->n_tokens += len;
    }
    return LMS_OK;
}

void score_items_free(score_items *it)
{
    for (int32_t i = 0; i < it->n_items; i++)
        free((void *)it->items[i].ids);
    free(it->items);
    it->items = NULL;
    it->n_items = 0;
}

lms_score_request score_request_with_items(const score_header *h, const score_items *it)
{
    lms_score_request req = h->request;
    req.items = it->items;
    req.n_items = it->n_items;
    return req;
}
