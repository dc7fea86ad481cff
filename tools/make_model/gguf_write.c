/*
 * gguf_write.c — the GGUF v3 writer (see mm_gguf.h): the model's and the
 * tokenizer's metadata and the tensor infos, encoded by mf_gguf in memory (a
 * few MB for a 150k-token vocabulary); the tensor data is streamed.
 */
#include "mm_gguf.h"

#include <stdio.h>

#include "mf_gguf.h"
#include "mm_out.h"
#include "mm_stream.h"

/* The metadata under construction and the architecture its keys start with. */
typedef struct {
    mf_gguf g;
    char arch[16];
} metadata;

/* "{arch}.suffix", as the converter names architecture keys. */
static const char *arch_key(metadata *m, const char *suffix)
{
    static char name[96];
    snprintf(name, sizeof name, "%s.%s", m->arch, suffix);
    return name;
}

static void model_metadata(metadata *m, const mm_spec *s)
{
    mf_gguf_str(&m->g, "general.architecture", m->arch);
    mf_gguf_str(&m->g, "general.type", "model");
    mf_gguf_str(&m->g, "general.name", s->name);
    mf_gguf_u32(&m->g, "general.alignment", m->g.alignment);
    mf_gguf_u32(&m->g, arch_key(m, "block_count"), (uint32_t)s->n_layers);
    mf_gguf_u32(&m->g, arch_key(m, "context_length"), (uint32_t)s->context_length);
    mf_gguf_u32(&m->g, arch_key(m, "embedding_length"), (uint32_t)s->d_model);
    mf_gguf_u32(&m->g, arch_key(m, "feed_forward_length"), (uint32_t)s->d_ff);
    mf_gguf_u32(&m->g, arch_key(m, "attention.head_count"), (uint32_t)s->n_heads);
    mf_gguf_u32(&m->g, arch_key(m, "attention.head_count_kv"), (uint32_t)s->n_kv_heads);
    mf_gguf_f32(&m->g, arch_key(m, "rope.freq_base"), (float)s->rope_theta);
    mf_gguf_f32(&m->g, arch_key(m, "attention.layer_norm_rms_epsilon"), (float)s->rms_eps);
    mf_gguf_u32(&m->g, arch_key(m, "attention.key_length"), (uint32_t)s->head_dim);
    mf_gguf_u32(&m->g, arch_key(m, "attention.value_length"), (uint32_t)s->head_dim);
    if (s->arch == MM_ARCH_LLAMA) {
        mf_gguf_u32(&m->g, arch_key(m, "vocab_size"), (uint32_t)s->vocab_size);
        mf_gguf_u32(&m->g, arch_key(m, "rope.dimension_count"), (uint32_t)s->head_dim);
    }
    if (s->rope_scaling == MM_ROPE_SCALING_LINEAR) {
        mf_gguf_str(&m->g, arch_key(m, "rope.scaling.type"), "linear");
        mf_gguf_f32(&m->g, arch_key(m, "rope.scaling.factor"), (float)s->rope_factor);
    }
    mf_gguf_u32(&m->g, "general.file_type", mm_dtype_about(s->dtype)->file_type);
    mf_gguf_u32(&m->g, "general.quantization_version", 2);
}

static void tokenizer_metadata(metadata *m, const mm_spec *s, const mm_vocab *v)
{
    mf_gguf_str(&m->g, "tokenizer.ggml.model", v->model);
    mf_gguf_str(&m->g, "tokenizer.ggml.pre", s->tokenizer_pre[0] ? s->tokenizer_pre : "default");
    mf_gguf_strs(&m->g, "tokenizer.ggml.tokens", (const char *const *)v->tokens,
                 (uint64_t)v->n_tokens);
    if (v->scores) mf_gguf_f32s(&m->g, "tokenizer.ggml.scores", v->scores, (uint64_t)v->n_tokens);
    mf_gguf_i32s(&m->g, "tokenizer.ggml.token_type", v->types, (uint64_t)v->n_tokens);
    if (v->merges)
        mf_gguf_strs(&m->g, "tokenizer.ggml.merges", (const char *const *)v->merges,
                     (uint64_t)v->n_merges);
    const struct {
        const char *name;
        int32_t id;
    } ids[] = {{"tokenizer.ggml.bos_token_id", v->bos_id},
               {"tokenizer.ggml.eos_token_id", v->eos_id},
               {"tokenizer.ggml.unknown_token_id", v->unk_id},
               {"tokenizer.ggml.padding_token_id", v->pad_id}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i].id >= 0) mf_gguf_u32(&m->g, ids[i].name, (uint32_t)ids[i].id);
    mf_gguf_bool(&m->g, "tokenizer.ggml.add_bos_token", v->add_bos);
    mf_gguf_bool(&m->g, "tokenizer.ggml.add_eos_token", v->add_eos);
}

mm_dtype mm_gguf_tensor_type(const mm_spec *spec, const mm_tensor *t)
{
    if (t->keep_f32) return MM_DTYPE_F32;
    if (t->cols % mm_dtype_about(spec->dtype)->block != 0) return MM_DTYPE_F16;
    return spec->dtype;
}

static void tensor_infos(mf_gguf *g, const mm_spec *spec, const mm_tensor *tensors, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const mm_tensor *t = &tensors[i];
        const mm_dtype type = mm_gguf_tensor_type(spec, t);
        const uint64_t ne[2] = {(uint64_t)t->cols, (uint64_t)t->rows};
        mf_gguf_tensor(g, t->gguf_name, mm_dtype_about(type)->ggml_type, (uint32_t)t->n_dims, ne,
                       mm_tensor_bytes(t, type));
    }
}

lms_status mm_write_gguf(const char *path, const mm_spec *spec, const mm_vocab *vocab,
                         const mm_tensor *tensors, size_t n_tensors, lms_error *err)
{
    metadata m;
    mf_gguf_init(&m.g);
    snprintf(m.arch, sizeof m.arch, "%s", mm_arch_name(spec->arch));
    model_metadata(&m, spec);
    tokenizer_metadata(&m, spec, vocab);
    tensor_infos(&m.g, spec, tensors, n_tensors);
    mf_buf head = {0};
    mf_gguf_head(&m.g, &head);

    lms_status st = LMS_OK;
    if (head.failed)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the GGUF metadata");
    mm_out out;
    if (st == LMS_OK) st = mm_out_open(&out, path, err);
    if (st == LMS_OK) {
        mm_out_write(&out, head.data, head.len);
        for (size_t i = 0; i < n_tensors && st == LMS_OK; i++) {
            mm_out_pad(&out, m.g.alignment);
            st = mm_stream_tensor(&out, spec, &tensors[i], mm_gguf_tensor_type(spec, &tensors[i]),
                                  MM_LAYOUT_GGUF, err);
        }
        if (st == LMS_OK) mm_out_pad(&out, m.g.alignment);
        if (st == LMS_OK)
            st = mm_out_commit(&out, err);
        else
            mm_out_abort(&out);
    }
    mf_buf_free(&head);
    mf_gguf_free(&m.g);
    return st;
}
