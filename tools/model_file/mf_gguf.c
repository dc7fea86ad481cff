/*
 * mf_gguf.c — the GGUF v3 encoder (see mf_gguf.h).
 */
#include "mf_gguf.h"

#include <string.h>

void mf_gguf_init(mf_gguf *g)
{
    memset(g, 0, sizeof *g);
    g->version = 3;
    g->alignment = MF_GGUF_ALIGNMENT;
}

void mf_gguf_free(mf_gguf *g)
{
    mf_buf_free(&g->kv);
    mf_buf_free(&g->infos);
}

bool mf_gguf_failed(const mf_gguf *g)
{
    return g->kv.failed || g->infos.failed;
}

void mf_gguf_put_str(mf_buf *b, const char *s)
{
    const size_t n = strlen(s);
    mf_buf_u64(b, n);
    mf_buf_put(b, s, n);
}

void mf_gguf_key(mf_gguf *g, const char *key, uint32_t type)
{
    mf_gguf_put_str(&g->kv, key);
    mf_buf_u32(&g->kv, type);
    g->n_kv++;
}

void mf_gguf_array(mf_gguf *g, const char *key, uint32_t elem_type, uint64_t n)
{
    mf_gguf_key(g, key, MF_GGUF_ARRAY);
    mf_buf_u32(&g->kv, elem_type);
    mf_buf_u64(&g->kv, n);
}

void mf_gguf_u32(mf_gguf *g, const char *key, uint32_t v)
{
    mf_gguf_key(g, key, MF_GGUF_UINT32);
    mf_buf_u32(&g->kv, v);
}

void mf_gguf_f32(mf_gguf *g, const char *key, float v)
{
    mf_gguf_key(g, key, MF_GGUF_FLOAT32);
    mf_buf_f32(&g->kv, v);
}

void mf_gguf_bool(mf_gguf *g, const char *key, bool v)
{
    mf_gguf_key(g, key, MF_GGUF_BOOL);
    mf_buf_u8(&g->kv, v ? 1 : 0);
}

void mf_gguf_str(mf_gguf *g, const char *key, const char *v)
{
    mf_gguf_key(g, key, MF_GGUF_STRING);
    mf_gguf_put_str(&g->kv, v);
}

void mf_gguf_strs(mf_gguf *g, const char *key, const char *const *v, uint64_t n)
{
    mf_gguf_array(g, key, MF_GGUF_STRING, n);
    for (uint64_t i = 0; i < n; i++)
        mf_gguf_put_str(&g->kv, v[i]);
}

void mf_gguf_i32s(mf_gguf *g, const char *key, const int32_t *v, uint64_t n)
{
    mf_gguf_array(g, key, MF_GGUF_INT32, n);
    for (uint64_t i = 0; i < n; i++)
        mf_buf_u32(&g->kv, (uint32_t)v[i]);
}

void mf_gguf_f32s(mf_gguf *g, const char *key, const float *v, uint64_t n)
{
    mf_gguf_array(g, key, MF_GGUF_FLOAT32, n);
    for (uint64_t i = 0; i < n; i++)
        mf_buf_f32(&g->kv, v[i]);
}

void mf_gguf_tensor(mf_gguf *g, const char *name, uint32_t ggml_type, uint32_t n_dims,
                    const uint64_t *ne, uint64_t n_bytes)
{
    mf_gguf_put_str(&g->infos, name);
    mf_buf_u32(&g->infos, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        mf_buf_u64(&g->infos, ne[d]);
    mf_buf_u32(&g->infos, ggml_type);
    mf_buf_u64(&g->infos, g->data_size);
    g->data_size += (n_bytes + g->alignment - 1) / g->alignment * g->alignment;
    g->n_tensors++;
}

void mf_gguf_head(const mf_gguf *g, mf_buf *out)
{
    mf_buf_put(out, "GGUF", 4);
    mf_buf_u32(out, g->version);
    mf_buf_u64(out, g->n_tensors);
    mf_buf_u64(out, g->n_kv);
    mf_buf_put(out, g->kv.data, g->kv.len);
    mf_buf_put(out, g->infos.data, g->infos.len);
    mf_buf_pad(out, g->alignment, 0);
    if (mf_gguf_failed(g)) out->failed = 1;
}
