/*
 * model_files.h — GGUF and safetensors files in memory for the model loader
 * tests (test_gguf.c, test_safetensors.c, test_model.c), encoded by the
 * library the model maker writes its checkpoints with (tools/model_file/).
 *
 * What this adds is for tests only: writers that hold their tensors' data
 * until the file is finished (tests replace and drop tensors first), the
 * whole file as one buffer, and exact f16/bf16 encodings that fail the test
 * when a value would round. Header-only (static inline) because each unit
 * test is a single .c file; include it after <cmocka.h>.
 */
#ifndef LMS_TEST_MODEL_FILES_H
#define LMS_TEST_MODEL_FILES_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmscore.h"
#include "mf_gguf.h"
#include "mf_safetensors.h"

/* A reader's result on a private, exact-size copy of a file's bytes (ASan
 * then catches any read past the end): f is the reader's handle, NULL after
 * a failure. */
typedef struct {
    void *f;
    unsigned char *copy;
    lms_status st;
    lms_error err;
} opened;

static inline unsigned char *exact_copy(const void *data, size_t len)
{
    unsigned char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    if (len) memcpy(copy, data, len);
    return copy;
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

/* A tensor of either format: name, type, dimensions (GGUF: ne, fastest
 * first; safetensors: shape, slowest first) and its bytes. */
#define MODEL_FILE_MAX_TENSORS 128

typedef struct {
    char name[160];
    uint32_t type;     /* GGUF: the ggml type */
    const char *dtype; /* safetensors */
    uint32_t n_dims;
    uint64_t dims[8];
    mf_buf data;
} test_tensor;

static inline void test_tensor_set(test_tensor *t, const char *name, uint32_t n_dims,
                                   const uint64_t *dims, const void *data, size_t n_bytes)
{
    assert_true(strlen(name) < sizeof t->name && n_dims <= 8);
    memcpy(t->name, name, strlen(name) + 1);
    t->n_dims = n_dims;
    if (n_dims) memcpy(t->dims, dims, n_dims * sizeof *dims);
    t->data = (mf_buf){0};
    mf_buf_put(&t->data, data, n_bytes);
    assert_false(t->data.failed);
}

/* Appends the tensors' data back to back, each padded to alignment. */
static inline void put_tensor_data(mf_buf *out, const test_tensor *t, size_t n, size_t alignment)
{
    for (size_t i = 0; i < n; i++) {
        mf_buf_put(out, t[i].data.data, t[i].data.len);
        if (i + 1 < n) mf_buf_pad(out, alignment, 0);
    }
}

/* ---- GGUF ---- */

typedef struct {
    mf_gguf meta; /* the metadata (mf_gguf_* calls); its tensor infos stay empty */
    test_tensor tensors[MODEL_FILE_MAX_TENSORS];
    size_t n_tensors;
} gguf_writer;

static inline void gw_init(gguf_writer *w)
{
    mf_gguf_init(&w->meta);
    w->n_tensors = 0;
}

static inline void gw_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                             const uint64_t *ne, const void *data, size_t n_bytes)
{
    assert_true(w->n_tensors < MODEL_FILE_MAX_TENSORS);
    test_tensor *t = &w->tensors[w->n_tensors++];
    test_tensor_set(t, name, n_dims, ne, data, n_bytes);
    t->type = type;
}

/* The whole file into *out (which it initialises); w is left as it was. */
static inline void gw_finish(const gguf_writer *w, mf_buf *out)
{
    /* A copy that shares the metadata buffer (only read) and gets its own
     * tensor infos. */
    mf_gguf file = w->meta;
    file.infos = (mf_buf){0};
    for (size_t i = 0; i < w->n_tensors; i++) {
        const test_tensor *t = &w->tensors[i];
        mf_gguf_tensor(&file, t->name, t->type, t->n_dims, t->dims, t->data.len);
    }
    *out = (mf_buf){0};
    mf_gguf_head(&file, out);
    put_tensor_data(out, w->tensors, w->n_tensors, file.alignment);
    mf_buf_free(&file.infos);
    assert_false(out->failed);
}

static inline void gw_free(gguf_writer *w)
{
    mf_gguf_free(&w->meta);
    for (size_t i = 0; i < w->n_tensors; i++)
        mf_buf_free(&w->tensors[i].data);
    w->n_tensors = 0;
}

/* ---- safetensors ---- */

typedef struct {
    test_tensor tensors[MODEL_FILE_MAX_TENSORS];
    size_t n;
} st_writer;

static inline void sw_tensor(st_writer *w, const char *name, const char *dtype, uint32_t n_dims,
                             const uint64_t *shape, const void *data, size_t n_bytes)
{
    assert_true(w->n < MODEL_FILE_MAX_TENSORS);
    test_tensor *t = &w->tensors[w->n++];
    test_tensor_set(t, name, n_dims, shape, data, n_bytes);
    t->dtype = dtype;
}

/* The whole file into *out (which it initialises). */
static inline void sw_finish(const st_writer *w, mf_buf *out)
{
    mf_safetensor heads[MODEL_FILE_MAX_TENSORS];
    for (size_t i = 0; i < w->n; i++) {
        const test_tensor *t = &w->tensors[i];
        heads[i] = (mf_safetensor){t->name, t->dtype, t->n_dims, t->dims, t->data.len};
    }
    *out = (mf_buf){0};
    mf_safetensors_head(heads, w->n, out);
    put_tensor_data(out, w->tensors, w->n, 1);
    assert_false(out->failed);
}

static inline void sw_free(st_writer *w)
{
    for (size_t i = 0; i < w->n; i++)
        mf_buf_free(&w->tensors[i].data);
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
