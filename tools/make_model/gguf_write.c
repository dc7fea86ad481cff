/*
 * gguf_write.c — the GGUF v3 writer (see mm_gguf.h). Metadata and tensor
 * infos are assembled in memory (a few MB for a 150k-token vocabulary); the
 * tensor data is streamed.
 */
#include "mm_gguf.h"

#include <stdio.h>
#include <string.h>

#include "mm_out.h"
#include "mm_stream.h"
#include "mm_weights.h"

#define GGUF_ALIGNMENT 32

enum { /* gguf_value_type */
       GV_UINT32 = 4,
       GV_INT32 = 5,
       GV_FLOAT32 = 6,
       GV_BOOL = 7,
       GV_STRING = 8,
       GV_ARRAY = 9,
};

typedef struct {
    mm_buf buf;
    uint64_t n_kv;
    char arch[16];
} metadata;

static void put_str(mm_buf *b, const char *s)
{
    const size_t n = strlen(s);
    mm_buf_u64(b, n);
    mm_buf_put(b, s, n);
}

static void key(metadata *m, const char *name, uint32_t type)
{
    put_str(&m->buf, name);
    mm_buf_u32(&m->buf, type);
    m->n_kv++;
}

/* "{arch}.suffix", as the converter names architecture keys. */
static const char *arch_key(metadata *m, const char *suffix)
{
    static char name[96];
    snprintf(name, sizeof name, "%s.%s", m->arch, suffix);
    return name;
}

static void kv_str(metadata *m, const char *name, const char *value)
{
    key(m, name, GV_STRING);
    put_str(&m->buf, value);
}

static void kv_u32(metadata *m, const char *name, uint32_t value)
{
    key(m, name, GV_UINT32);
    mm_buf_u32(&m->buf, value);
}

static void kv_f32(metadata *m, const char *name, float value)
{
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    key(m, name, GV_FLOAT32);
    mm_buf_u32(&m->buf, bits);
}

static void kv_bool(metadata *m, const char *name, bool value)
{
    const uint8_t byte = value ? 1 : 0;
    key(m, name, GV_BOOL);
    mm_buf_put(&m->buf, &byte, 1);
}

static void kv_array_header(metadata *m, const char *name, uint32_t elem_type, uint64_t n)
{
    key(m, name, GV_ARRAY);
    mm_buf_u32(&m->buf, elem_type);
    mm_buf_u64(&m->buf, n);
}

static void kv_strings(metadata *m, const char *name, char *const *values, uint64_t n)
{
    kv_array_header(m, name, GV_STRING, n);
    for (uint64_t i = 0; i < n; i++)
        put_str(&m->buf, values[i]);
}

static void kv_i32s(metadata *m, const char *name, const int32_t *values, uint64_t n)
{
    kv_array_header(m, name, GV_INT32, n);
    for (uint64_t i = 0; i < n; i++)
        mm_buf_u32(&m->buf, (uint32_t)values[i]);
}

static void kv_f32s(metadata *m, const char *name, const float *values, uint64_t n)
{
    kv_array_header(m, name, GV_FLOAT32, n);
    for (uint64_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &values[i], sizeof bits);
        mm_buf_u32(&m->buf, bits);
    }
}

/* Per dtype: ggml's tensor type id and the file's llama_ftype ("mostly
 * <dtype>", general.file_type). */
static const struct {
    uint32_t ggml_type, file_type;
} TYPE_IDS[] = {
    [MM_DTYPE_F32] = {0, 0},
    [MM_DTYPE_F16] = {1, 1},
    [MM_DTYPE_BF16] = {30, 32},
    [MM_DTYPE_Q8_0] = {8, 7},
};

static void model_metadata(metadata *m, const mm_spec *s)
{
    kv_str(m, "general.architecture", m->arch);
    kv_str(m, "general.type", "model");
    kv_str(m, "general.name", s->name);
    kv_u32(m, "general.alignment", GGUF_ALIGNMENT);
    kv_u32(m, arch_key(m, "block_count"), (uint32_t)s->n_layers);
    kv_u32(m, arch_key(m, "context_length"), (uint32_t)s->context_length);
    kv_u32(m, arch_key(m, "embedding_length"), (uint32_t)s->d_model);
    kv_u32(m, arch_key(m, "feed_forward_length"), (uint32_t)s->d_ff);
    kv_u32(m, arch_key(m, "attention.head_count"), (uint32_t)s->n_heads);
    kv_u32(m, arch_key(m, "attention.head_count_kv"), (uint32_t)s->n_kv_heads);
    kv_f32(m, arch_key(m, "rope.freq_base"), (float)s->rope_theta);
    kv_f32(m, arch_key(m, "attention.layer_norm_rms_epsilon"), (float)s->rms_eps);
    kv_u32(m, arch_key(m, "attention.key_length"), (uint32_t)s->head_dim);
    kv_u32(m, arch_key(m, "attention.value_length"), (uint32_t)s->head_dim);
    if (s->arch == MM_ARCH_LLAMA) {
        kv_u32(m, arch_key(m, "vocab_size"), (uint32_t)s->vocab_size);
        kv_u32(m, arch_key(m, "rope.dimension_count"), (uint32_t)s->head_dim);
    }
    if (s->rope_scaling == MM_ROPE_SCALING_LINEAR) {
        kv_str(m, arch_key(m, "rope.scaling.type"), "linear");
        kv_f32(m, arch_key(m, "rope.scaling.factor"), (float)s->rope_factor);
    }
    kv_u32(m, "general.file_type", TYPE_IDS[s->dtype].file_type);
    kv_u32(m, "general.quantization_version", 2);
}

static void tokenizer_metadata(metadata *m, const mm_spec *s, const mm_vocab *v)
{
    kv_str(m, "tokenizer.ggml.model", v->model);
    kv_str(m, "tokenizer.ggml.pre", s->tokenizer_pre[0] ? s->tokenizer_pre : "default");
    kv_strings(m, "tokenizer.ggml.tokens", v->tokens, (uint64_t)v->n_tokens);
    if (v->scores) kv_f32s(m, "tokenizer.ggml.scores", v->scores, (uint64_t)v->n_tokens);
    kv_i32s(m, "tokenizer.ggml.token_type", v->types, (uint64_t)v->n_tokens);
    if (v->merges) kv_strings(m, "tokenizer.ggml.merges", v->merges, (uint64_t)v->n_merges);
    const struct {
        const char *name;
        int32_t id;
    } ids[] = {{"tokenizer.ggml.bos_token_id", v->bos_id},
               {"tokenizer.ggml.eos_token_id", v->eos_id},
               {"tokenizer.ggml.unknown_token_id", v->unk_id},
               {"tokenizer.ggml.padding_token_id", v->pad_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) kv_u32(m, ids[i].name, (uint32_t)ids[i].id);
    kv_bool(m, "tokenizer.ggml.add_bos_token", v->add_bos);
    kv_bool(m, "tokenizer.ggml.add_eos_token", v->add_eos);
}

mm_dtype mm_gguf_tensor_type(const mm_spec *spec, const mm_tensor *t)
{
    if (t->keep_f32) return MM_DTYPE_F32;
    if (spec->dtype == MM_DTYPE_Q8_0 && t->cols % MM_Q8_0_BLOCK != 0) return MM_DTYPE_F16;
    return spec->dtype;
}

static uint64_t aligned(uint64_t n)
{
    return (n + GGUF_ALIGNMENT - 1) / GGUF_ALIGNMENT * GGUF_ALIGNMENT;
}

static void tensor_infos(mm_buf *b, const mm_spec *spec, const mm_tensor *tensors, size_t n)
{
    uint64_t offset = 0;
    for (size_t i = 0; i < n; i++) {
        const mm_tensor *t = &tensors[i];
        const mm_dtype type = mm_gguf_tensor_type(spec, t);
        put_str(b, t->gguf_name);
        mm_buf_u32(b, (uint32_t)t->n_dims);
        mm_buf_u64(b, (uint64_t)t->cols);
        if (t->n_dims == 2) mm_buf_u64(b, (uint64_t)t->rows);
        mm_buf_u32(b, TYPE_IDS[type].ggml_type);
        mm_buf_u64(b, offset);
        offset = aligned(offset + mm_tensor_bytes(t, type));
    }
}

lms_status mm_write_gguf(const char *path, const mm_spec *spec, const mm_vocab *vocab,
                         const mm_tensor *tensors, size_t n_tensors, lms_error *err)
{
    metadata m = {0};
    snprintf(m.arch, sizeof m.arch, "%s", mm_arch_name(spec->arch));
    model_metadata(&m, spec);
    tokenizer_metadata(&m, spec, vocab);
    mm_buf infos = {0};
    tensor_infos(&infos, spec, tensors, n_tensors);
    mm_buf header = {0};
    mm_buf_put(&header, "GGUF", 4);
    mm_buf_u32(&header, 3);
    mm_buf_u64(&header, n_tensors);
    mm_buf_u64(&header, m.n_kv);

    lms_status st = LMS_OK;
    if (header.failed || m.buf.failed || infos.failed)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the GGUF metadata");
    mm_out out;
    if (st == LMS_OK) st = mm_out_open(&out, path, err);
    if (st == LMS_OK) {
        mm_out_write(&out, header.data, header.len);
        mm_out_write(&out, m.buf.data, m.buf.len);
        mm_out_write(&out, infos.data, infos.len);
        for (size_t i = 0; i < n_tensors && st == LMS_OK; i++) {
            mm_out_pad(&out, GGUF_ALIGNMENT);
            st = mm_stream_tensor(&out, spec, &tensors[i], mm_gguf_tensor_type(spec, &tensors[i]),
                                  MM_LAYOUT_GGUF, err);
        }
        if (st == LMS_OK) mm_out_pad(&out, GGUF_ALIGNMENT);
        if (st == LMS_OK)
            st = mm_out_commit(&out, err);
        else
            mm_out_abort(&out);
    }
    mm_buf_free(&header);
    mm_buf_free(&m.buf);
    mm_buf_free(&infos);
    return st;
}
