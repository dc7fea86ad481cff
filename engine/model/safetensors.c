/*
 * safetensors.c — the validating .safetensors reader (see safetensors.h).
 *
 * The JSON header is parsed with json-c; tensor names are copied out of it
 * (the JSON tree is freed after parsing) and data stays in the mapping.
 */
#include "safetensors.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "file_map.h"
#include "name_index.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "safetensors.c reads the little-endian header length with memcpy"
#endif

/* The reference implementation's limit on the JSON header. */
#define SAFETENSORS_MAX_HEADER_BYTES 100000000u
#define SAFETENSORS_METADATA_KEY     "__metadata__"

struct safetensors_file {
    lms_file_map map; /* set when safetensors_open mapped the file */
    safetensors_tensor *tensors;
    size_t n_tensors;
    char *names; /* all tensor names, NUL-separated */
    name_index index;
};

static const struct {
    const char *name;
    safetensors_dtype dtype;
    uint32_t bytes;
} dtypes[] = {
    {"BOOL", SAFETENSORS_BOOL, 1},       {"U8", SAFETENSORS_U8, 1},
    {"I8", SAFETENSORS_I8, 1},           {"F8_E5M2", SAFETENSORS_F8_E5M2, 1},
    {"F8_E4M3", SAFETENSORS_F8_E4M3, 1}, {"I16", SAFETENSORS_I16, 2},
    {"U16", SAFETENSORS_U16, 2},         {"F16", SAFETENSORS_F16, 2},
    {"BF16", SAFETENSORS_BF16, 2},       {"I32", SAFETENSORS_I32, 4},
    {"U32", SAFETENSORS_U32, 4},         {"F32", SAFETENSORS_F32, 4},
    {"F64", SAFETENSORS_F64, 8},         {"I64", SAFETENSORS_I64, 8},
    {"U64", SAFETENSORS_U64, 8},
};

static lms_status fail_tensor(const char *name, lms_error *err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static lms_status fail_tensor(const char *name, lms_error *err, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tensor '%.80s': %s", name, what);
}

/* A JSON integer that is >= 0 (json-c clamps values past INT64_MAX to it,
 * which the size checks then reject). */
static bool json_natural(json_object *o, uint64_t *v)
{
    if (!json_object_is_type(o, json_type_int)) return false;
    int64_t i = json_object_get_int64(o);
    if (i < 0) return false;
    *v = (uint64_t)i;
    return true;
}

static lms_status read_dtype(const char *name, json_object *info, safetensors_tensor *t,
                             uint32_t *elem_bytes, lms_error *err)
{
    json_object *o;
    if (!json_object_object_get_ex(info, "dtype", &o) || !json_object_is_type(o, json_type_string))
        return fail_tensor(name, err, "\"dtype\" is missing or not a string");
    const char *s = json_object_get_string(o);
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
        if (strcmp(s, dtypes[i].name) == 0) {
            t->dtype = dtypes[i].dtype;
            t->dtype_name = dtypes[i].name;
            *elem_bytes = dtypes[i].bytes;
            return LMS_OK;
        }
    }
    return fail_tensor(name, err, "unknown dtype \"%.20s\"", s);
}

static lms_status read_shape(const char *name, json_object *info, safetensors_tensor *t,
                             lms_error *err)
{
    json_object *o;
    if (!json_object_object_get_ex(info, "shape", &o) || !json_object_is_type(o, json_type_array))
        return fail_tensor(name, err, "\"shape\" is missing or not an array");
    size_t n = json_object_array_length(o);
    if (n > SAFETENSORS_MAX_DIMS)
        return fail_tensor(name, err, "%zu dimensions (at most %d supported)", n,
                           SAFETENSORS_MAX_DIMS);
    t->n_dims = (uint32_t)n;
    t->n_elements = 1;
    for (size_t d = 0; d < n; d++) {
        if (!json_natural(json_object_array_get_idx(o, d), &t->shape[d]))
            return fail_tensor(name, err, "shape[%zu] is not a non-negative integer", d);
        if (__builtin_mul_overflow(t->n_elements, t->shape[d], &t->n_elements))
            return fail_tensor(name, err, "element count overflows 64 bits");
    }
    return LMS_OK;
}

static lms_status read_offsets(const char *name, json_object *info, uint64_t *begin, uint64_t *end,
                               lms_error *err)
{
    json_object *o;
    if (!json_object_object_get_ex(info, "data_offsets", &o) ||
        !json_object_is_type(o, json_type_array) || json_object_array_length(o) != 2 ||
        !json_natural(json_object_array_get_idx(o, 0), begin) ||
        !json_natural(json_object_array_get_idx(o, 1), end))
        return fail_tensor(name, err,
                           "\"data_offsets\" is not [begin, end] of non-negative integers");
    return LMS_OK;
}

static lms_status read_tensor(const char *name, json_object *info, const unsigned char *data,
                              uint64_t data_size, safetensors_tensor *t, lms_error *err)
{
    if (!json_object_is_type(info, json_type_object))
        return fail_tensor(name, err, "its entry is not a JSON object");
    uint32_t elem_bytes = 0;
    uint64_t begin = 0, end = 0;
    lms_status st = read_dtype(name, info, t, &elem_bytes, err);
    if (st == LMS_OK) st = read_shape(name, info, t, err);
    if (st == LMS_OK) st = read_offsets(name, info, &begin, &end, err);
    if (st != LMS_OK) return st;
    if (begin > end || end > data_size)
        return fail_tensor(name, err,
                           "data_offsets [%" PRIu64 ", %" PRIu64 "] outside the %" PRIu64
                           "-byte data section",
                           begin, end, data_size);
    if (__builtin_mul_overflow(t->n_elements, (uint64_t)elem_bytes, &t->n_bytes) ||
        t->n_bytes != end - begin)
        return fail_tensor(name, err,
                           "%" PRIu64 " elements of %s need %" PRIu64
                           " bytes, data_offsets span %" PRIu64,
                           t->n_elements, t->dtype_name, t->n_elements * elem_bytes, end - begin);
    t->data = data + begin;
    return LMS_OK;
}

static int compare_by_data(const void *a, const void *b)
{
    const safetensors_tensor *x = *(const safetensors_tensor *const *)a;
    const safetensors_tensor *y = *(const safetensors_tensor *const *)b;
    uintptr_t px = (uintptr_t)x->data, py = (uintptr_t)y->data;
    return (px > py) - (px < py);
}

static lms_status check_no_overlap(safetensors_file *f, lms_error *err)
{
    if (f->n_tensors < 2) return LMS_OK;
    const safetensors_tensor **order = calloc(f->n_tensors, sizeof *order);
    if (!order) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "sorting tensors");
    for (size_t i = 0; i < f->n_tensors; i++)
        order[i] = &f->tensors[i];
    qsort(order, f->n_tensors, sizeof *order, compare_by_data);
    lms_status st = LMS_OK;
    for (size_t i = 1; i < f->n_tensors && st == LMS_OK; i++) {
        const safetensors_tensor *prev = order[i - 1], *cur = order[i];
        if ((const unsigned char *)prev->data + prev->n_bytes > (const unsigned char *)cur->data)
            st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tensors '%.80s' and '%.80s' overlap",
                          prev->name, cur->name);
    }
    free(order);
    return st;
}

/* Counts the tensors (every key but __metadata__) and the bytes their
 * names need. */
static lms_status size_tensor_table(json_object *root, size_t *n, size_t *name_bytes,
                                    lms_error *err)
{
    *n = 0;
    *name_bytes = 0;
    json_object_object_foreach(root, key, value)
    {
        if (strcmp(key, SAFETENSORS_METADATA_KEY) == 0) {
            if (!json_object_is_type(value, json_type_object))
                return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "__metadata__ is not an object");
            continue;
        }
        (*n)++;
        *name_bytes += strlen(key) + 1;
    }
    return LMS_OK;
}

static lms_status build_tensor_table(safetensors_file *f, json_object *root,
                                     const unsigned char *data, uint64_t data_size, lms_error *err)
{
    size_t name_bytes;
    lms_status st = size_tensor_table(root, &f->n_tensors, &name_bytes, err);
    if (st != LMS_OK || f->n_tensors == 0) return st;
    f->tensors = calloc(f->n_tensors, sizeof *f->tensors);
    f->names = malloc(name_bytes);
    if (!f->tensors || !f->names || !name_index_init(&f->index, f->n_tensors))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%zu tensor entries", f->n_tensors);
    size_t i = 0;
    char *name = f->names;
    json_object_object_foreach(root, key, value)
    {
        if (strcmp(key, SAFETENSORS_METADATA_KEY) == 0) continue;
        size_t len = strlen(key);
        memcpy(name, key, len + 1);
        safetensors_tensor *t = &f->tensors[i];
        t->name = name;
        if ((st = read_tensor(name, value, data, data_size, t, err)) != LMS_OK) return st;
        name_index_set(&f->index, i, name, len);
        name += len + 1;
        i++;
    }
    size_t dup;
    if (!name_index_sort(&f->index, &dup))
        return fail_tensor(f->tensors[dup].name, err, "name appears twice");
    return check_no_overlap(f, err);
}

static lms_status parse_header_json(const char *text, size_t len, json_object **root,
                                    lms_error *err)
{
    json_tokener *tok = json_tokener_new();
    if (!tok) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "json tokener");
    *root = json_tokener_parse_ex(tok, text, (int)len);
    enum json_tokener_error jerr = json_tokener_get_error(tok);
    size_t end = json_tokener_get_parse_end(tok);
    json_tokener_free(tok);
    if (!*root || jerr != json_tokener_success) {
        json_object_put(*root);
        *root = NULL;
        return lms_fail(
            err, LMS_ERR_FORMAT, NULL, NULL, "header JSON: %s near byte %zu",
            jerr == json_tokener_continue ? "unexpected end" : json_tokener_error_desc(jerr), end);
    }
    /* The writer pads the header with spaces to an 8-byte boundary. */
    for (size_t i = end; i < len; i++) {
        if (!isspace((unsigned char)text[i])) {
            json_object_put(*root);
            *root = NULL;
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "header JSON: unexpected byte 0x%02x at %zu after the object",
                            (unsigned char)text[i], i);
        }
    }
    if (!json_object_is_type(*root, json_type_object)) {
        json_object_put(*root);
        *root = NULL;
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "header JSON is not an object");
    }
    return LMS_OK;
}

static lms_status parse(safetensors_file *f, const unsigned char *base, size_t size, lms_error *err)
{
    uint64_t header_len;
    if (size < sizeof header_len)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "truncated: %zu bytes, too short for the header length", size);
    memcpy(&header_len, base, sizeof header_len);
    if (header_len > size - sizeof header_len)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "truncated: header length %" PRIu64 " exceeds the %zu bytes that follow it",
                        header_len, size - sizeof header_len);
    if (header_len > SAFETENSORS_MAX_HEADER_BYTES || header_len < 2)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "header length %" PRIu64 " is outside 2..%u", header_len,
                        SAFETENSORS_MAX_HEADER_BYTES);
    json_object *root;
    lms_status st =
        parse_header_json((const char *)base + sizeof header_len, (size_t)header_len, &root, err);
    if (st != LMS_OK) return st;
    const size_t data_start = sizeof header_len + (size_t)header_len;
    st = build_tensor_table(f, root, base + data_start, size - data_start, err);
    json_object_put(root);
    return st;
}

lms_status safetensors_open_memory(const void *data, size_t size, safetensors_file **out,
                                   lms_error *err)
{
    *out = NULL;
    safetensors_file *f = calloc(1, sizeof *f);
    if (!f) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "safetensors_file");
    lms_status st = parse(f, data, data ? size : 0, err);
    if (st != LMS_OK) {
        safetensors_close(f);
        return st;
    }
    *out = f;
    return LMS_OK;
}

static lms_status parse_mapping(const void *data, size_t size, void *out, lms_error *err)
{
    return safetensors_open_memory(data, size, out, err);
}

lms_status safetensors_open(const char *path, safetensors_file **out, lms_error *err)
{
    *out = NULL;
    lms_file_map map;
    lms_status st = lms_file_map_parse(path, parse_mapping, out, &map, err);
    if (st == LMS_OK) (*out)->map = map;
    return st;
}

void safetensors_close(safetensors_file *f)
{
    if (!f) return;
    free(f->tensors);
    free(f->names);
    name_index_free(&f->index);
    lms_file_map_close(&f->map);
    free(f);
}

size_t safetensors_tensor_count(const safetensors_file *f)
{
    return f->n_tensors;
}

const safetensors_tensor *safetensors_tensor_at(const safetensors_file *f, size_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const safetensors_tensor *safetensors_find_tensor(const safetensors_file *f, const char *name)
{
    size_t id;
    if (!name_index_find(&f->index, name, strlen(name), &id)) return NULL;
    return &f->tensors[id];
}
