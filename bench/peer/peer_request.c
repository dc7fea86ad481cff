/*
 * peer_request.c — the peer benchmark's token-id request from JSON (see
 * peer_request.h).
 */
#include "peer_request.h"

#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The length of array, which must be an array (of ids: copy_ids checks). */
static lms_status array_length(json_object *array, const char *field, int64_t *n, lms_error *err)
{
    if (!array || !json_object_is_type(array, json_type_array))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field,
                        "%s must be an array of token ids", field);
    *n = (int64_t)json_object_array_length(array);
    return LMS_OK;
}

/* Copies array's ids to *ids, advancing it; fills t. */
static lms_status copy_ids(json_object *array, const char *field, int32_t **ids, lms_tokens *t,
                           lms_error *err)
{
    const size_t n = json_object_array_length(array);
    for (size_t i = 0; i < n; i++) {
        json_object *x = json_object_array_get_idx(array, i);
        const int64_t id = json_object_get_int64(x);
        if (!json_object_is_type(x, json_type_int) || id < INT32_MIN || id > INT32_MAX)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field,
                            "%s[%zu] is not a 32-bit integer", field, i);
        (*ids)[i] = (int32_t)id;
    }
    t->ids = *ids;
    t->len = (int32_t)n;
    *ids += n;
    return LMS_OK;
}

static lms_status parse(json_object *root, peer_request *r, lms_error *err)
{
    json_object *query = NULL, *items = NULL, *labels = NULL;
    json_object_object_get_ex(root, "query", &query);
    json_object_object_get_ex(root, "items", &items);
    json_object_object_get_ex(root, "label_token_ids", &labels);
    int64_t n_query = 0, n_labels = 0, n_items = 0, total = 0;
    lms_status st = array_length(query, "query", &n_query, err);
    if (st == LMS_OK) st = array_length(labels, "label_token_ids", &n_labels, err);
    if (st == LMS_OK) st = array_length(items, "items", &n_items, err);
    total = n_query + n_labels;
    char field[32];
    for (int64_t i = 0; i < n_items && st == LMS_OK; i++) {
        int64_t n = 0;
        snprintf(field, sizeof field, "items[%lld]", (long long)i);
        st = array_length(json_object_array_get_idx(items, (size_t)i), field, &n, err);
        total += n;
    }
    if (st != LMS_OK) return st;
    if (total > INT32_MAX || n_items > INT32_MAX)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL, "the request is too large");
    r->ids = malloc((size_t)(total ? total : 1) * sizeof *r->ids);
    r->items = malloc((size_t)(n_items ? n_items : 1) * sizeof *r->items);
    if (!r->ids || !r->items)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the request");
    int32_t *next = r->ids;
    lms_tokens label_tokens;
    st = copy_ids(query, "query", &next, &r->req.query, err);
    if (st == LMS_OK) st = copy_ids(labels, "label_token_ids", &next, &label_tokens, err);
    for (int64_t i = 0; i < n_items && st == LMS_OK; i++) {
        snprintf(field, sizeof field, "items[%lld]", (long long)i);
        st = copy_ids(json_object_array_get_idx(items, (size_t)i), field, &next, &r->items[i], err);
    }
    r->req.items = r->items;
    r->req.n_items = (int32_t)n_items;
    r->req.label_ids = label_tokens.ids;
    r->req.n_labels = label_tokens.len;
    return st;
}

lms_status peer_request_read(const char *path, peer_request *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    json_object *root = json_object_from_file(path);
    if (!root)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "cannot read a JSON request from %s: %s", path,
                        json_util_get_last_err());
    lms_status st = json_object_is_type(root, json_type_object)
                        ? parse(root, out, err)
                        : lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                                   "%s: the request must be an object", path);
    json_object_put(root);
    if (st != LMS_OK) peer_request_free(out);
    return st;
}

void peer_request_free(peer_request *r)
{
    free(r->ids);
    free(r->items);
    memset(r, 0, sizeof *r);
}

int64_t peer_request_tokens(const peer_request *r)
{
    int64_t n = r->req.query.len;
    for (int32_t i = 0; i < r->req.n_items; i++)
        n += r->req.items[i].len;
    return n;
}
