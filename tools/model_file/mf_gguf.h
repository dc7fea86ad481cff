/*
 * mf_gguf.h — encodes a GGUF v3 file as llama.cpp's writer lays it out:
 * "GGUF", version, tensor and metadata counts, the metadata entries, the
 * tensor infos (name, dimensions, ggml type, data offset), zero padding to
 * the alignment, then each tensor's data at its offset, the offsets aligned.
 *
 * The metadata and the tensor infos are assembled in memory; the tensor data
 * is the caller's to write after mf_gguf_head, so that it can be streamed.
 * Nothing checks what is written: tests build malformed files with it.
 */
#ifndef MF_GGUF_H
#define MF_GGUF_H

#include <stdbool.h>
#include <stdint.h>

#include "mf_buf.h"

/* gguf_type: the type of a metadata value. */
enum {
    MF_GGUF_UINT8 = 0,
    MF_GGUF_INT8 = 1,
    MF_GGUF_UINT16 = 2,
    MF_GGUF_INT16 = 3,
    MF_GGUF_UINT32 = 4,
    MF_GGUF_INT32 = 5,
    MF_GGUF_FLOAT32 = 6,
    MF_GGUF_BOOL = 7,
    MF_GGUF_STRING = 8,
    MF_GGUF_ARRAY = 9,
    MF_GGUF_UINT64 = 10,
    MF_GGUF_INT64 = 11,
    MF_GGUF_FLOAT64 = 12,
};

#define MF_GGUF_ALIGNMENT 32 /* the default; general.alignment overrides it */

typedef struct {
    uint32_t version;   /* 3 */
    uint32_t alignment; /* of the tensor data; must match general.alignment when written */
    mf_buf kv;          /* the encoded metadata entries */
    uint64_t n_kv;
    mf_buf infos; /* the encoded tensor infos */
    uint64_t n_tensors;
    uint64_t data_size; /* tensor data so far, each tensor's padding included */
} mf_gguf;

void mf_gguf_init(mf_gguf *g); /* version 3, alignment 32, empty */
void mf_gguf_free(mf_gguf *g);
/* Did an allocation fail? The encoding is then incomplete. */
bool mf_gguf_failed(const mf_gguf *g);

/* A GGUF string (u64 length, the bytes) appended to b: for values that
 * follow mf_gguf_key or mf_gguf_array. */
void mf_gguf_put_str(mf_buf *b, const char *s);

/* Starts a metadata entry of any type; the caller appends its value to
 * g->kv. */
void mf_gguf_key(mf_gguf *g, const char *key, uint32_t type);
/* Starts an array entry of n elements; the caller appends them to g->kv. */
void mf_gguf_array(mf_gguf *g, const char *key, uint32_t elem_type, uint64_t n);

void mf_gguf_u32(mf_gguf *g, const char *key, uint32_t v);
void mf_gguf_f32(mf_gguf *g, const char *key, float v);
void mf_gguf_bool(mf_gguf *g, const char *key, bool v);
void mf_gguf_str(mf_gguf *g, const char *key, const char *v);
void mf_gguf_strs(mf_gguf *g, const char *key, const char *const *v, uint64_t n);
void mf_gguf_i32s(mf_gguf *g, const char *key, const int32_t *v, uint64_t n);
void mf_gguf_f32s(mf_gguf *g, const char *key, const float *v, uint64_t n);

/* A tensor info: ne[0] is the fastest-varying dimension (in-features). Its
 * n_bytes of data go at the next aligned offset, after the tensors added
 * before it. */
void mf_gguf_tensor(mf_gguf *g, const char *name, uint32_t ggml_type, uint32_t n_dims,
                    const uint64_t *ne, uint64_t n_bytes);

/* Appends to out all that comes before the first tensor's data: header,
 * metadata, tensor infos and the padding to the alignment. The tensors'
 * data then follows in the order they were added, each one padded with
 * zeros to the alignment before the next. */
void mf_gguf_head(const mf_gguf *g, mf_buf *out);

#endif
