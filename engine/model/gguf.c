/*
 * gguf.c — the validating GGUF v2/v3 reader (see gguf.h).
 *
 * Layout (little-endian): "GGUF", u32 version, u64 n_tensors, u64 n_kv,
 * n_kv × (string key, u32 type, value), n_tensors × (string name, u32 n_dims,
 * u64 ne[n_dims], u32 ggml type, u64 offset), padding to general.alignment,
 * then the data section that the offsets point into. A string is a u64 byte
 * length and the bytes; an array a u32 element type, a u64 count and the
 * elements.
 *
 * Everything read from the file is bounded by the bytes that remain before it
 * is used, so a count can only make us allocate what the file could hold.
 */
#include "gguf.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "file_map.h"
#include "name_index.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "gguf.c reads little-endian fields with memcpy: a little-endian host is required"
#endif

#define GGUF_MAGIC             "GGUF"
#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS          4
/* Arrays of arrays are skipped, never indexed; the depth bound keeps the
 * skipping recursion off the end of the stack. */
#define GGUF_MAX_ARRAY_DEPTH 8
/* Smallest possible encodings, used to bound counts before allocating:
 * a KV is a key length, a type and at least one value byte; a tensor info
 * a name length, n_dims, one ne, a type and an offset. */
#define GGUF_MIN_KV_BYTES          (8 + 4 + 1)
#define GGUF_MIN_TENSOR_INFO_BYTES (8 + 4 + 8 + 4 + 8)
#define GGUF_MIN_STRING_BYTES      8
#define GGUF_MIN_ARRAY_BYTES       (4 + 8)

typedef struct {
    gguf_str key;
    gguf_value_type type;
    const unsigned char *value; /* scalar bytes, string bytes or first array element */
    uint64_t len;               /* string: bytes; array: elements */
    gguf_value_type elem_type;  /* arrays only */
    gguf_str *strs;             /* arrays of strings: one view per element */
} gguf_kv;

struct gguf_file {
    const unsigned char *base;
    size_t size;
    lms_file_map map; /* set when gguf_open mapped the file */
    uint32_t version;
    uint64_t n_kv;
    gguf_kv *kv;
    name_index kv_index;
    uint64_t n_tensors;
    gguf_tensor *tensors;
    name_index tensor_index;
};

typedef struct {
    const unsigned char *base;
    size_t size;
    size_t pos;
} cursor;

/* A name's length as a printf precision: a name from the file may be longer
 * than an int, and a negative precision would print up to a NUL that the
 * file need not have. */
static int shown(size_t len)
{
    return len > 120 ? 120 : (int)len;
}

static size_t bytes_left(const cursor *c)
{
    return c->size - c->pos;
}

static lms_status truncated(const cursor *c, size_t need, const char *what, lms_error *err)
{
    return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                    "truncated: %s needs %zu bytes at offset %zu but only %zu remain", what, need,
                    c->pos, bytes_left(c));
}

static lms_status take(cursor *c, size_t n, const char *what, const unsigned char **out,
                       lms_error *err)
{
    if (n > bytes_left(c)) return truncated(c, n, what, err);
    *out = c->base + c->pos;
    c->pos += n;
    return LMS_OK;
}

static lms_status read_u32(cursor *c, const char *what, uint32_t *v, lms_error *err)
{
    const unsigned char *p = NULL;
    lms_status st = take(c, sizeof *v, what, &p, err);
    if (st == LMS_OK) memcpy(v, p, sizeof *v);
    return st;
}

static lms_status read_u64(cursor *c, const char *what, uint64_t *v, lms_error *err)
{
    const unsigned char *p = NULL;
    lms_status st = take(c, sizeof *v, what, &p, err);
    if (st == LMS_OK) memcpy(v, p, sizeof *v);
    return st;
}

static lms_status read_string(cursor *c, const char *what, gguf_str *s, lms_error *err)
{
    uint64_t len;
    lms_status st = read_u64(c, what, &len, err);
    if (st != LMS_OK) return st;
    if (len > bytes_left(c))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "%s: length %" PRIu64 " at offset %zu exceeds the %zu bytes that remain",
                        what, len, c->pos - 8, bytes_left(c));
    const unsigned char *p;
    take(c, (size_t)len, what, &p, err);
    s->ptr = (const char *)p;
    s->len = (size_t)len;
    return LMS_OK;
}

static const char *value_type_name(uint32_t t)
{
    static const char *const names[] = {"u8",   "i8",  "u16",   "i16", "u32", "i32", "f32",
                                        "bool", "str", "array", "u64", "i64", "f64"};
    return t < sizeof names / sizeof names[0] ? names[t] : "unknown";
}

/* Bytes of one scalar element; 0 for string, array and unknown types. */
static size_t scalar_size(uint32_t t)
{
    switch (t) {
    case GGUF_TYPE_UINT8:
    case GGUF_TYPE_INT8:
    case GGUF_TYPE_BOOL:
        return 1;
    case GGUF_TYPE_UINT16:
    case GGUF_TYPE_INT16:
        return 2;
    case GGUF_TYPE_UINT32:
    case GGUF_TYPE_INT32:
    case GGUF_TYPE_FLOAT32:
        return 4;
    case GGUF_TYPE_UINT64:
    case GGUF_TYPE_INT64:
    case GGUF_TYPE_FLOAT64:
        return 8;
    default:
        return 0;
    }
}

static bool is_known_value_type(uint32_t t)
{
    return scalar_size(t) != 0 || t == GGUF_TYPE_STRING || t == GGUF_TYPE_ARRAY;
}

/* Skips one array body (element type, count, elements) nested inside
 * another array: bounds-checked, not indexed. */
static lms_status skip_array(cursor *c, int depth, lms_error *err)
{
    if (depth > GGUF_MAX_ARRAY_DEPTH)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "arrays nested deeper than %d levels at offset %zu", GGUF_MAX_ARRAY_DEPTH,
                        c->pos);
    uint32_t elem;
    uint64_t n;
    lms_status st = read_u32(c, "array element type", &elem, err);
    if (st == LMS_OK) st = read_u64(c, "array length", &n, err);
    if (st != LMS_OK) return st;
    size_t size = scalar_size(elem);
    const unsigned char *p;
    if (size) {
        if (n > bytes_left(c) / size)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "array of %" PRIu64
                            " %s at offset %zu exceeds the %zu bytes that remain",
                            n, value_type_name(elem), c->pos, bytes_left(c));
        return take(c, (size_t)n * size, "array elements", &p, err);
    }
    if (elem == GGUF_TYPE_STRING) {
        if (n > bytes_left(c) / GGUF_MIN_STRING_BYTES)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "array of %" PRIu64
                            " strings at offset %zu exceeds the %zu bytes that remain",
                            n, c->pos, bytes_left(c));
        for (uint64_t i = 0; i < n; i++) {
            gguf_str s;
            if ((st = read_string(c, "string array element", &s, err)) != LMS_OK) return st;
        }
        return LMS_OK;
    }
    if (elem == GGUF_TYPE_ARRAY) {
        if (n > bytes_left(c) / GGUF_MIN_ARRAY_BYTES)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "array of %" PRIu64
                            " arrays at offset %zu exceeds the %zu bytes that remain",
                            n, c->pos, bytes_left(c));
        for (uint64_t i = 0; i < n; i++)
            if ((st = skip_array(c, depth + 1, err)) != LMS_OK) return st;
        return LMS_OK;
    }
    return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                    "unknown array element type %" PRIu32 " at offset %zu", elem, c->pos - 12);
}

/* A top-level array: recorded in kv, with string elements indexed. */
static lms_status read_array(cursor *c, gguf_kv *kv, lms_error *err)
{
    size_t header_pos = c->pos;
    uint32_t elem;
    lms_status st = read_u32(c, "array element type", &elem, err);
    if (st == LMS_OK) st = read_u64(c, "array length", &kv->len, err);
    if (st != LMS_OK) return st;
    if (elem != GGUF_TYPE_STRING) {
        /* Numeric arrays and arrays of arrays: validate by skipping. */
        c->pos = header_pos;
        if ((st = skip_array(c, 1, err)) != LMS_OK) return st;
        kv->elem_type = (gguf_value_type)elem;
        kv->value = c->base + header_pos + 12;
        return LMS_OK;
    }
    kv->elem_type = GGUF_TYPE_STRING;
    kv->value = c->base + c->pos;
    if (kv->len > bytes_left(c) / GGUF_MIN_STRING_BYTES)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "array of %" PRIu64
                        " strings at offset %zu exceeds the %zu bytes that remain",
                        kv->len, c->pos, bytes_left(c));
    if (kv->len == 0) return LMS_OK;
    kv->strs = calloc((size_t)kv->len, sizeof *kv->strs);
    if (!kv->strs)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "indexing %" PRIu64 " strings", kv->len);
    for (uint64_t i = 0; i < kv->len; i++)
        if ((st = read_string(c, "string array element", &kv->strs[i], err)) != LMS_OK) return st;
    return LMS_OK;
}

static lms_status read_kv(cursor *c, gguf_kv *kv, lms_error *err)
{
    uint32_t type;
    lms_status st = read_string(c, "key", &kv->key, err);
    if (st == LMS_OK) st = read_u32(c, "value type", &type, err);
    if (st != LMS_OK) return st;
    if (!is_known_value_type(type))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "unknown value type %" PRIu32, type);
    kv->type = (gguf_value_type)type;
    if (type == GGUF_TYPE_ARRAY) return read_array(c, kv, err);
    if (type == GGUF_TYPE_STRING) {
        gguf_str s;
        if ((st = read_string(c, "string value", &s, err)) != LMS_OK) return st;
        kv->value = (const unsigned char *)s.ptr;
        kv->len = s.len;
        return LMS_OK;
    }
    return take(c, scalar_size(type), value_type_name(type), &kv->value, err);
}

/* (block size in elements, bytes per block) of each ggml type, as
 * gguf-py's GGML_QUANT_SIZES lists them; {0, 0} for ids that were removed
 * or never assigned. */
static const struct {
    const char *name;
    uint32_t block;
    uint32_t bytes;
} ggml_types[] = {
    [0] = {"f32", 1, 4},         [1] = {"f16", 1, 2},         [2] = {"q4_0", 32, 18},
    [3] = {"q4_1", 32, 20},      [6] = {"q5_0", 32, 22},      [7] = {"q5_1", 32, 24},
    [8] = {"q8_0", 32, 34},      [9] = {"q8_1", 32, 36},      [10] = {"q2_K", 256, 84},
    [11] = {"q3_K", 256, 110},   [12] = {"q4_K", 256, 144},   [13] = {"q5_K", 256, 176},
    [14] = {"q6_K", 256, 210},   [15] = {"q8_K", 256, 292},   [16] = {"iq2_xxs", 256, 66},
    [17] = {"iq2_xs", 256, 74},  [18] = {"iq3_xxs", 256, 98}, [19] = {"iq1_s", 256, 50},
    [20] = {"iq4_nl", 32, 18},   [21] = {"iq3_s", 256, 110},  [22] = {"iq2_s", 256, 82},
    [23] = {"iq4_xs", 256, 136}, [24] = {"i8", 1, 1},         [25] = {"i16", 1, 2},
    [26] = {"i32", 1, 4},        [27] = {"i64", 1, 8},        [28] = {"f64", 1, 8},
    [29] = {"iq1_m", 256, 56},   [30] = {"bf16", 1, 2},       [34] = {"tq1_0", 256, 54},
    [35] = {"tq2_0", 256, 66},   [39] = {"mxfp4", 32, 17},
};
#define N_GGML_TYPES (sizeof ggml_types / sizeof ggml_types[0])

const char *gguf_ggml_type_name(uint32_t type)
{
    return type < N_GGML_TYPES && ggml_types[type].name ? ggml_types[type].name : "unknown";
}

static lms_status tensor_fail(const gguf_tensor *t, lms_status status, const char *what,
                              lms_error *err)
{
    return lms_fail(err, status, NULL, NULL, "tensor '%.*s': %s", shown(t->name.len), t->name.ptr,
                    what);
}

/* Reads one tensor info and computes its element count and byte size. */
static lms_status read_tensor_info(cursor *c, gguf_tensor *t, uint64_t *offset, lms_error *err)
{
    lms_status st = read_string(c, "tensor name", &t->name, err);
    if (st == LMS_OK) st = read_u32(c, "tensor n_dims", &t->n_dims, err);
    if (st != LMS_OK) return st;
    char msg[160];
    if (t->n_dims < 1 || t->n_dims > GGUF_MAX_DIMS) {
        snprintf(msg, sizeof msg, "%" PRIu32 " dimensions (1 to %d allowed)", t->n_dims,
                 GGUF_MAX_DIMS);
        return tensor_fail(t, LMS_ERR_FORMAT, msg, err);
    }
    t->n_elements = 1;
    for (uint32_t d = 0; d < GGUF_MAX_DIMS; d++) {
        t->ne[d] = 1;
        if (d < t->n_dims && (st = read_u64(c, "tensor dimension", &t->ne[d], err)) != LMS_OK)
            return st;
        if (t->ne[d] == 0 || t->ne[d] > INT64_MAX) {
            snprintf(msg, sizeof msg, "dimension %" PRIu32 " is %" PRIu64, d, t->ne[d]);
            return tensor_fail(t, LMS_ERR_FORMAT, msg, err);
        }
        if (__builtin_mul_overflow(t->n_elements, t->ne[d], &t->n_elements) ||
            t->n_elements > INT64_MAX)
            return tensor_fail(t, LMS_ERR_FORMAT, "element count overflows 63 bits", err);
    }
    if ((st = read_u32(c, "tensor type", &t->type, err)) != LMS_OK) return st;
    if ((st = read_u64(c, "tensor offset", offset, err)) != LMS_OK) return st;
    if (t->type >= N_GGML_TYPES || !ggml_types[t->type].name) {
        snprintf(msg, sizeof msg, "unknown ggml type %" PRIu32, t->type);
        return tensor_fail(t, LMS_ERR_FORMAT, msg, err);
    }
    uint32_t block = ggml_types[t->type].block, block_bytes = ggml_types[t->type].bytes;
    if (t->ne[0] % block != 0) {
        snprintf(msg, sizeof msg,
                 "row length %" PRIu64 " is not a multiple of %s's block of %" PRIu32, t->ne[0],
                 ggml_types[t->type].name, block);
        return tensor_fail(t, LMS_ERR_FORMAT, msg, err);
    }
    /* Types wider than their element count (f64, i64) can overflow here. */
    if (__builtin_mul_overflow(t->n_elements / block, (uint64_t)block_bytes, &t->n_bytes))
        return tensor_fail(t, LMS_ERR_FORMAT, "byte size overflows 64 bits", err);
    return LMS_OK;
}

/* Metadata lookup by NUL-terminated key. */
static const gguf_kv *find_kv(const gguf_file *f, const char *key)
{
    size_t id;
    if (!name_index_find(&f->kv_index, key, strlen(key), &id)) return NULL;
    return &f->kv[id];
}

static lms_status read_alignment(const gguf_file *f, uint64_t *alignment, lms_error *err)
{
    *alignment = GGUF_DEFAULT_ALIGNMENT;
    if (!gguf_has_key(f, "general.alignment")) return LMS_OK;
    uint32_t a;
    lms_status st = gguf_get_u32(f, "general.alignment", &a, err);
    if (st != LMS_OK) return st;
    if (a == 0 || (a & (a - 1)) != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "general.alignment %" PRIu32 " is not a power of two", a);
    *alignment = a;
    return LMS_OK;
}

static int compare_by_offset(const void *a, const void *b)
{
    const gguf_tensor *x = *(const gguf_tensor *const *)a, *y = *(const gguf_tensor *const *)b;
    uintptr_t px = (uintptr_t)x->data, py = (uintptr_t)y->data;
    return (px > py) - (px < py);
}

static lms_status check_no_overlap(gguf_file *f, lms_error *err)
{
    if (f->n_tensors < 2) return LMS_OK;
    const gguf_tensor **order = calloc((size_t)f->n_tensors, sizeof *order);
    if (!order) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "sorting tensors");
    for (uint64_t i = 0; i < f->n_tensors; i++)
        order[i] = &f->tensors[i];
    qsort(order, (size_t)f->n_tensors, sizeof *order, compare_by_offset);
    lms_status st = LMS_OK;
    for (uint64_t i = 1; i < f->n_tensors && st == LMS_OK; i++) {
        const gguf_tensor *prev = order[i - 1], *cur = order[i];
        if ((const unsigned char *)prev->data + prev->n_bytes > (const unsigned char *)cur->data)
            st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                          "tensors '%.*s' and '%.*s' overlap in the data section",
                          shown(prev->name.len), prev->name.ptr, shown(cur->name.len),
                          cur->name.ptr);
    }
    free(order);
    return st;
}

static lms_status read_tensor_infos(gguf_file *f, cursor *c, lms_error *err)
{
    if (f->n_tensors > bytes_left(c) / GGUF_MIN_TENSOR_INFO_BYTES)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "%" PRIu64 " tensor infos cannot fit in the %zu bytes that remain",
                        f->n_tensors, bytes_left(c));
    uint64_t alignment;
    lms_status st = read_alignment(f, &alignment, err);
    if (st != LMS_OK) return st;
    if (f->n_tensors == 0) return LMS_OK;
    f->tensors = calloc((size_t)f->n_tensors, sizeof *f->tensors);
    uint64_t *offsets = calloc((size_t)f->n_tensors, sizeof *offsets);
    if (!f->tensors || !offsets || !name_index_init(&f->tensor_index, (size_t)f->n_tensors)) {
        free(offsets);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%" PRIu64 " tensor infos", f->n_tensors);
    }
    for (uint64_t i = 0; i < f->n_tensors && st == LMS_OK; i++) {
        st = read_tensor_info(c, &f->tensors[i], &offsets[i], err);
        if (st != LMS_OK) lms_fail_context(err, "tensor info %" PRIu64, i);
    }
    /* The data section starts at the first aligned offset after the infos. */
    size_t data_start = c->pos + (size_t)((alignment - c->pos % alignment) % alignment);
    if (st == LMS_OK && data_start > f->size)
        st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                      "truncated: the data section would start at offset %zu, past the end (%zu)",
                      data_start, f->size);
    for (uint64_t i = 0; i < f->n_tensors && st == LMS_OK; i++) {
        gguf_tensor *t = &f->tensors[i];
        uint64_t data_size = f->size - data_start;
        char msg[200];
        if (offsets[i] % alignment != 0) {
            snprintf(msg, sizeof msg,
                     "offset %" PRIu64 " is not a multiple of the alignment %" PRIu64, offsets[i],
                     alignment);
            st = tensor_fail(t, LMS_ERR_FORMAT, msg, err);
        } else if (offsets[i] > data_size || t->n_bytes > data_size - offsets[i]) {
            snprintf(msg, sizeof msg,
                     "data [%" PRIu64 ", +%" PRIu64 ") lies outside the %" PRIu64
                     "-byte data section",
                     offsets[i], t->n_bytes, data_size);
            st = tensor_fail(t, LMS_ERR_FORMAT, msg, err);
        } else {
            t->data = f->base + data_start + offsets[i];
        }
    }
    free(offsets);
    if (st != LMS_OK) return st;
    for (uint64_t i = 0; i < f->n_tensors; i++)
        name_index_set(&f->tensor_index, (size_t)i, f->tensors[i].name.ptr, f->tensors[i].name.len);
    size_t dup;
    if (!name_index_sort(&f->tensor_index, &dup))
        return tensor_fail(&f->tensors[dup], LMS_ERR_FORMAT, "name appears twice", err);
    return check_no_overlap(f, err);
}

static lms_status read_metadata(gguf_file *f, cursor *c, lms_error *err)
{
    if (f->n_kv > bytes_left(c) / GGUF_MIN_KV_BYTES)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "%" PRIu64 " metadata entries cannot fit in the %zu bytes that remain",
                        f->n_kv, bytes_left(c));
    if (f->n_kv == 0) return LMS_OK;
    f->kv = calloc((size_t)f->n_kv, sizeof *f->kv);
    if (!f->kv || !name_index_init(&f->kv_index, (size_t)f->n_kv))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%" PRIu64 " metadata entries", f->n_kv);
    for (uint64_t i = 0; i < f->n_kv; i++) {
        lms_status st = read_kv(c, &f->kv[i], err);
        if (st != LMS_OK) {
            if (f->kv[i].key.ptr)
                lms_fail_context(err, "metadata entry %" PRIu64 " ('%.*s')", i,
                                 shown(f->kv[i].key.len), f->kv[i].key.ptr);
            else
                lms_fail_context(err, "metadata entry %" PRIu64, i);
            return st;
        }
        name_index_set(&f->kv_index, (size_t)i, f->kv[i].key.ptr, f->kv[i].key.len);
    }
    size_t dup;
    if (!name_index_sort(&f->kv_index, &dup))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "metadata key '%.*s' appears twice",
                        shown(f->kv[dup].key.len), f->kv[dup].key.ptr);
    return LMS_OK;
}

static lms_status read_header(gguf_file *f, cursor *c, lms_error *err)
{
    const unsigned char *magic = NULL;
    lms_status st = take(c, 4, "magic", &magic, err);
    if (st != LMS_OK) return st;
    if (memcmp(magic, GGUF_MAGIC, 4) != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "not a GGUF file (magic %02x %02x %02x %02x)", magic[0], magic[1], magic[2],
                        magic[3]);
    if ((st = read_u32(c, "version", &f->version, err)) != LMS_OK) return st;
    if (f->version == 1)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "GGUF version 1 (32-bit counts) is not supported; reconvert the model");
    if (f->version != 2 && f->version != 3) {
        uint32_t swapped = __builtin_bswap32(f->version);
        if (swapped == 2 || swapped == 3)
            return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                            "big-endian GGUF files are not supported");
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "GGUF version %" PRIu32 " is not supported (2 and 3 are)", f->version);
    }
    if ((st = read_u64(c, "tensor count", &f->n_tensors, err)) != LMS_OK) return st;
    return read_u64(c, "metadata count", &f->n_kv, err);
}

static lms_status parse(gguf_file *f, lms_error *err)
{
    cursor c = {f->base, f->size, 0};
    lms_status st = read_header(f, &c, err);
    if (st == LMS_OK) st = read_metadata(f, &c, err);
    if (st == LMS_OK) st = read_tensor_infos(f, &c, err);
    return st;
}

lms_status gguf_open_memory(const void *data, size_t size, gguf_file **out, lms_error *err)
{
    *out = NULL;
    gguf_file *f = calloc(1, sizeof *f);
    if (!f) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "gguf_file");
    f->base = data;
    f->size = data ? size : 0;
    lms_status st = parse(f, err);
    if (st != LMS_OK) {
        gguf_close(f);
        return st;
    }
    *out = f;
    return LMS_OK;
}

static lms_status parse_mapping(const void *data, size_t size, void *out, lms_error *err)
{
    return gguf_open_memory(data, size, out, err);
}

lms_status gguf_open(const char *path, gguf_file **out, lms_error *err)
{
    *out = NULL;
    lms_file_map map;
    lms_status st = lms_file_map_parse(path, parse_mapping, out, &map, err);
    if (st == LMS_OK) (*out)->map = map;
    return st;
}

void gguf_close(gguf_file *f)
{
    if (!f) return;
    for (uint64_t i = 0; i < f->n_kv && f->kv; i++)
        free(f->kv[i].strs);
    free(f->kv);
    free(f->tensors);
    name_index_free(&f->kv_index);
    name_index_free(&f->tensor_index);
    lms_file_map_close(&f->map);
    free(f);
}

uint32_t gguf_version(const gguf_file *f)
{
    return f->version;
}

bool gguf_has_key(const gguf_file *f, const char *key)
{
    return find_kv(f, key) != NULL;
}

static lms_status find_typed(const gguf_file *f, const char *key, gguf_value_type type,
                             const gguf_kv **out, lms_error *err)
{
    *out = find_kv(f, key);
    if (!*out) return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "GGUF key '%s' is missing", key);
    if ((*out)->type != type)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "GGUF key '%s' has type %s, expected %s",
                        key, value_type_name((*out)->type), value_type_name(type));
    return LMS_OK;
}

/* An integer metadata value of any width: value = negative ? -magnitude : magnitude. */
typedef struct {
    bool negative;
    uint64_t magnitude;
} wide_int;

static bool kv_integer(const gguf_kv *kv, wide_int *v)
{
    const unsigned char *p = kv->value;
    int64_t s;
    switch (kv->type) {
    case GGUF_TYPE_UINT8:
        *v = (wide_int){false, p[0]};
        return true;
    case GGUF_TYPE_UINT16: {
        uint16_t u;
        memcpy(&u, p, sizeof u);
        *v = (wide_int){false, u};
        return true;
    }
    case GGUF_TYPE_UINT32: {
        uint32_t u;
        memcpy(&u, p, sizeof u);
        *v = (wide_int){false, u};
        return true;
    }
    case GGUF_TYPE_UINT64: {
        uint64_t u;
        memcpy(&u, p, sizeof u);
        *v = (wide_int){false, u};
        return true;
    }
    case GGUF_TYPE_INT8:
        s = (int8_t)p[0];
        break;
    case GGUF_TYPE_INT16: {
        int16_t i;
        memcpy(&i, p, sizeof i);
        s = i;
        break;
    }
    case GGUF_TYPE_INT32: {
        int32_t i;
        memcpy(&i, p, sizeof i);
        s = i;
        break;
    }
    case GGUF_TYPE_INT64:
        memcpy(&s, p, sizeof s);
        break;
    default:
        return false;
    }
    /* -(s + 1) + 1 avoids negating INT64_MIN. */
    *v = s < 0 ? (wide_int){true, (uint64_t)(-(s + 1)) + 1} : (wide_int){false, (uint64_t)s};
    return true;
}

static lms_status find_integer(const gguf_file *f, const char *key, wide_int *v, lms_error *err)
{
    const gguf_kv *kv = find_kv(f, key);
    if (!kv) return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "GGUF key '%s' is missing", key);
    if (!kv_integer(kv, v))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "GGUF key '%s' has type %s, expected an integer", key,
                        value_type_name(kv->type));
    return LMS_OK;
}

static lms_status out_of_range(const char *key, wide_int v, const char *range, lms_error *err)
{
    return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                    "GGUF key '%s' = %s%" PRIu64 " does not fit in %s", key, v.negative ? "-" : "",
                    v.magnitude, range);
}

lms_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, lms_error *err)
{
    wide_int v = {0};
    lms_status st = find_integer(f, key, &v, err);
    if (st != LMS_OK) return st;
    if (v.negative || v.magnitude > UINT32_MAX) return out_of_range(key, v, "u32", err);
    *out = (uint32_t)v.magnitude;
    return LMS_OK;
}

lms_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, lms_error *err)
{
    wide_int v = {0};
    lms_status st = find_integer(f, key, &v, err);
    if (st != LMS_OK) return st;
    if (v.magnitude > (uint64_t)INT64_MAX + v.negative) return out_of_range(key, v, "i64", err);
    *out = v.negative ? -(int64_t)(v.magnitude - 1) - 1 : (int64_t)v.magnitude;
    return LMS_OK;
}

lms_status gguf_get_f32(const gguf_file *f, const char *key, float *out, lms_error *err)
{
    const gguf_kv *kv = find_kv(f, key);
    if (!kv) return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "GGUF key '%s' is missing", key);
    if (kv->type == GGUF_TYPE_FLOAT32) {
        memcpy(out, kv->value, sizeof *out);
        return LMS_OK;
    }
    if (kv->type == GGUF_TYPE_FLOAT64) {
        double d;
        memcpy(&d, kv->value, sizeof d);
        if (isfinite(d) && fabs(d) > 3.4028234663852886e38)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "GGUF key '%s' = %g does not fit in f32", key, d);
        *out = (float)d;
        return LMS_OK;
    }
    wide_int v = {0};
    if (!kv_integer(kv, &v))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "GGUF key '%s' has type %s, expected a number", key,
                        value_type_name(kv->type));
    /* Integers are accepted when f32 holds them exactly. */
    if (v.magnitude > (1ull << 24)) return out_of_range(key, v, "f32 exactly", err);
    *out = v.negative ? -(float)v.magnitude : (float)v.magnitude;
    return LMS_OK;
}

lms_status gguf_get_bool(const gguf_file *f, const char *key, bool *out, lms_error *err)
{
    const gguf_kv *kv;
    lms_status st = find_typed(f, key, GGUF_TYPE_BOOL, &kv, err);
    if (st == LMS_OK) *out = kv->value[0] != 0;
    return st;
}

lms_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, lms_error *err)
{
    const gguf_kv *kv;
    lms_status st = find_typed(f, key, GGUF_TYPE_STRING, &kv, err);
    if (st == LMS_OK) *out = (gguf_str){(const char *)kv->value, (size_t)kv->len};
    return st;
}

lms_status gguf_get_array_info(const gguf_file *f, const char *key, gguf_value_type *elem_type,
                               uint64_t *n, lms_error *err)
{
    const gguf_kv *kv;
    lms_status st = find_typed(f, key, GGUF_TYPE_ARRAY, &kv, err);
    if (st != LMS_OK) return st;
    *elem_type = kv->elem_type;
    *n = kv->len;
    return LMS_OK;
}

lms_status gguf_get_array_str(const gguf_file *f, const char *key, uint64_t i, gguf_str *out,
                              lms_error *err)
{
    const gguf_kv *kv;
    lms_status st = find_typed(f, key, GGUF_TYPE_ARRAY, &kv, err);
    if (st != LMS_OK) return st;
    if (kv->elem_type != GGUF_TYPE_STRING)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "GGUF key '%s' is an array of %s, expected strings", key,
                        value_type_name(kv->elem_type));
    if (i >= kv->len)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "GGUF key '%s': index %" PRIu64 " is past its %" PRIu64 " elements", key, i,
                        kv->len);
    *out = kv->strs[i];
    return LMS_OK;
}

lms_status gguf_get_array_data(const gguf_file *f, const char *key, const void **data,
                               lms_error *err)
{
    const gguf_kv *kv;
    lms_status st = find_typed(f, key, GGUF_TYPE_ARRAY, &kv, err);
    if (st != LMS_OK) return st;
    if (scalar_size(kv->elem_type) == 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "GGUF key '%s' is an array of %s, not of numbers", key,
                        value_type_name(kv->elem_type));
    *data = kv->value;
    return LMS_OK;
}

uint64_t gguf_kv_count(const gguf_file *f)
{
    return f->n_kv;
}

gguf_str gguf_kv_key(const gguf_file *f, uint64_t i)
{
    return f->kv[i].key;
}

gguf_value_type gguf_kv_type(const gguf_file *f, uint64_t i)
{
    return f->kv[i].type;
}

uint64_t gguf_tensor_count(const gguf_file *f)
{
    return f->n_tensors;
}

const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i)
{
    return i < f->n_tensors ? &f->tensors[i] : NULL;
}

const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name)
{
    size_t id;
    if (!name_index_find(&f->tensor_index, name, strlen(name), &id)) return NULL;
    return &f->tensors[id];
}
