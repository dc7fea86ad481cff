/*
 * model_files.h — builds GGUF and safetensors files in memory for the model
 * loader tests (test_gguf.c, test_safetensors.c, test_model.c): a growable
 * byte buffer, a GGUF writer laid out as llama.cpp writes files (metadata of
 * every type, tensor infos, aligned data) and a safetensors writer.
 * Header-only (static inline) because each unit test is a single .c file;
 * include it after <cmocka.h>.
 */
#ifndef LMS_TEST_MODEL_FILES_H
#define LMS_TEST_MODEL_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    unsigned char *data;
    size_t len, cap;
} byte_buf;

static inline void buf_put(byte_buf *b, const void *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n)
            cap *= 2;
        b->data = realloc(b->data, cap);
        assert_non_null(b->data);
        b->cap = cap;
    }
    if (n) memcpy(b->data + b->len, p, n);
    b->len += n;
}

static inline void buf_u8(byte_buf *b, uint8_t v)
{
    buf_put(b, &v, sizeof v);
}

static inline void buf_u16(byte_buf *b, uint16_t v)
{
    buf_put(b, &v, sizeof v);
}

static inline void buf_u32(byte_buf *b, uint32_t v)
{
    buf_put(b, &v, sizeof v);
}

static inline void buf_u64(byte_buf *b, uint64_t v)
{
    buf_put(b, &v, sizeof v);
}

static inline void buf_f32(byte_buf *b, float v)
{
    buf_put(b, &v, sizeof v);
}

/* A GGUF string: u64 length, then the bytes. */
static inline void buf_gguf_str(byte_buf *b, const char *s)
{
    buf_u64(b, strlen(s));
    buf_put(b, s, strlen(s));
}

static inline void buf_pad(byte_buf *b, size_t alignment, uint8_t byte)
{
    while (b->len % alignment)
        buf_u8(b, byte);
}

static inline void buf_free(byte_buf *b)
{
    free(b->data);
    *b = (byte_buf){0};
}

/* f32 -> f16 bits for values f16 holds exactly (zero or normal). */
static inline uint16_t f16_bits_exact(float v)
{
    uint32_t w;
    memcpy(&w, &v, sizeof w);
    if ((w & 0x7fffffffu) == 0) return (uint16_t)(w >> 16);
    int exp = (int)((w >> 23) & 0xff) - 127 + 15;
    assert_true(exp > 0 && exp < 31 && (w & 0x1fffu) == 0);
    return (uint16_t)(((w >> 16) & 0x8000u) | ((uint32_t)exp << 10) | ((w >> 13) & 0x3ffu));
}

static inline uint16_t bf16_bits_exact(float v)
{
    uint32_t w;
    memcpy(&w, &v, sizeof w);
    assert_true((w & 0xffffu) == 0);
    return (uint16_t)(w >> 16);
}

/* ---- GGUF ---- */

#define GW_MAX_TENSORS 128

typedef struct {
    const char *name;
    uint32_t type;
    uint32_t n_dims;
    uint64_t ne[4];
    byte_buf data;
} gw_tensor_spec;

typedef struct {
    uint32_t version;
    uint32_t alignment; /* must match general.alignment when that key is written */
    byte_buf kv;        /* the encoded metadata entries */
    uint64_t n_kv;
    gw_tensor_spec tensors[GW_MAX_TENSORS];
    size_t n_tensors;
} gguf_writer;

static inline void gw_init(gguf_writer *w)
{
    memset(w, 0, sizeof *w);
    w->version = 3;
    w->alignment = 32;
}

/* Starts a metadata entry; the caller appends the value to w->kv. */
static inline void gw_key(gguf_writer *w, const char *key, uint32_t type)
{
    buf_gguf_str(&w->kv, key);
    buf_u32(&w->kv, type);
    w->n_kv++;
}

static inline void gw_u32(gguf_writer *w, const char *key, uint32_t v)
{
    gw_key(w, key, 4);
    buf_u32(&w->kv, v);
}

static inline void gw_f32(gguf_writer *w, const char *key, float v)
{
    gw_key(w, key, 6);
    buf_f32(&w->kv, v);
}

static inline void gw_str(gguf_writer *w, const char *key, const char *v)
{
    gw_key(w, key, 8);
    buf_gguf_str(&w->kv, v);
}

static inline void gw_str_array(gguf_writer *w, const char *key, const char *const *v, size_t n)
{
    gw_key(w, key, 9);
    buf_u32(&w->kv, 8);
    buf_u64(&w->kv, n);
    for (size_t i = 0; i < n; i++)
        buf_gguf_str(&w->kv, v[i]);
}

static inline void gw_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                             const uint64_t *ne, const void *data, size_t n_bytes)
{
    assert_true(w->n_tensors < GW_MAX_TENSORS);
    gw_tensor_spec *t = &w->tensors[w->n_tensors++];
    t->name = name;
    t->type = type;
    t->n_dims = n_dims;
    memcpy(t->ne, ne, n_dims * sizeof *ne);
    t->data = (byte_buf){0};
    buf_put(&t->data, data, n_bytes);
}

/* Writes the whole file: header, metadata, tensor infos with aligned
 * offsets, padding, data. */
static inline void gw_finish(const gguf_writer *w, byte_buf *out)
{
    *out = (byte_buf){0};
    buf_put(out, "GGUF", 4);
    buf_u32(out, w->version);
    buf_u64(out, w->n_tensors);
    buf_u64(out, w->n_kv);
    buf_put(out, w->kv.data, w->kv.len);
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const gw_tensor_spec *t = &w->tensors[i];
        buf_gguf_str(out, t->name);
        buf_u32(out, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            buf_u64(out, t->ne[d]);
        buf_u32(out, t->type);
        buf_u64(out, offset);
        offset += (t->data.len + w->alignment - 1) / w->alignment * w->alignment;
    }
    buf_pad(out, w->alignment, 0);
    for (size_t i = 0; i < w->n_tensors; i++) {
        buf_put(out, w->tensors[i].data.data, w->tensors[i].data.len);
        if (i + 1 < w->n_tensors) buf_pad(out, w->alignment, 0);
    }
}

static inline void gw_free(gguf_writer *w)
{
    buf_free(&w->kv);
    for (size_t i = 0; i < w->n_tensors; i++)
        buf_free(&w->tensors[i].data);
}

/* ---- safetensors ---- */

#define SW_MAX_TENSORS 128

typedef struct {
    char name[160];
    const char *dtype;
    uint32_t n_dims;
    uint64_t shape[8];
    byte_buf data;
} sw_tensor_spec;

typedef struct {
    sw_tensor_spec tensors[SW_MAX_TENSORS];
    size_t n;
} st_writer;

static inline void sw_tensor(st_writer *w, const char *name, const char *dtype, uint32_t n_dims,
                             const uint64_t *shape, const void *data, size_t n_bytes)
{
    assert_true(w->n < SW_MAX_TENSORS);
    sw_tensor_spec *t = &w->tensors[w->n++];
    assert_true(strlen(name) < sizeof t->name);
    memcpy(t->name, name, strlen(name) + 1);
    t->dtype = dtype;
    t->n_dims = n_dims;
    if (n_dims) memcpy(t->shape, shape, n_dims * sizeof *shape);
    t->data = (byte_buf){0};
    buf_put(&t->data, data, n_bytes);
}

/* Writes the file as the reference writer does: header JSON with
 * __metadata__, data laid out in tensor order, header padded with spaces
 * to a multiple of 8 bytes. */
static inline void sw_finish(const st_writer *w, byte_buf *out)
{
    byte_buf json = {0};
    char piece[512];
    buf_put(&json, "{\"__metadata__\":{\"format\":\"pt\"}", 31);
    uint64_t offset = 0;
    for (size_t i = 0; i < w->n; i++) {
        const sw_tensor_spec *t = &w->tensors[i];
        int n = snprintf(piece, sizeof piece, ",\"%s\":{\"dtype\":\"%s\",\"shape\":[", t->name,
                         t->dtype);
        buf_put(&json, piece, (size_t)n);
        for (uint32_t d = 0; d < t->n_dims; d++) {
            n = snprintf(piece, sizeof piece, "%s%llu", d ? "," : "",
                         (unsigned long long)t->shape[d]);
            buf_put(&json, piece, (size_t)n);
        }
        n = snprintf(piece, sizeof piece, "],\"data_offsets\":[%llu,%llu]}",
                     (unsigned long long)offset, (unsigned long long)(offset + t->data.len));
        buf_put(&json, piece, (size_t)n);
        offset += t->data.len;
    }
    buf_u8(&json, '}');
    buf_pad(&json, 8, ' ');
    *out = (byte_buf){0};
    buf_u64(out, json.len);
    buf_put(out, json.data, json.len);
    for (size_t i = 0; i < w->n; i++)
        buf_put(out, w->tensors[i].data.data, w->tensors[i].data.len);
    buf_free(&json);
}

static inline void sw_free(st_writer *w)
{
    for (size_t i = 0; i < w->n; i++)
        buf_free(&w->tensors[i].data);
    w->n = 0;
}

/* Writes len bytes to path. */
static inline void write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

#endif
