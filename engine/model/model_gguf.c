/*
 * model_gguf.c — the GGUF front-end of lms_model_load: llama.cpp's metadata
 * keys ({arch}.block_count, ...) into lms_model_config, and llama.cpp's
 * tensor names (token_embd.weight, blk.N.attn_q.weight, ...) as a tensor
 * source for the binder (model_bind.h). The gguf_file stays open in
 * model->gguf: F32 weights point into its mapping and the tokenizer reads
 * its metadata.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "gguf.h"
#include "model_bind.h"
#include "model_formats.h"

static const char *const gguf_global_names[LMS_GLOBAL_COUNT] = {
    [LMS_GLOBAL_TOK_EMBD] = "token_embd.weight",
    [LMS_GLOBAL_OUTPUT_NORM] = "output_norm.weight",
    [LMS_GLOBAL_OUTPUT] = "output.weight",
    [LMS_GLOBAL_ROPE_FREQS] = "rope_freqs.weight",
};

static const char *const gguf_layer_names[LMS_LAYER_COUNT] = {
    [LMS_LAYER_ATTN_NORM] = "attn_norm.weight",
    [LMS_LAYER_Q] = "attn_q.weight",
    [LMS_LAYER_K] = "attn_k.weight",
    [LMS_LAYER_V] = "attn_v.weight",
    [LMS_LAYER_Q_BIAS] = "attn_q.bias",
    [LMS_LAYER_K_BIAS] = "attn_k.bias",
    [LMS_LAYER_V_BIAS] = "attn_v.bias",
    [LMS_LAYER_Q_NORM] = "attn_q_norm.weight",
    [LMS_LAYER_K_NORM] = "attn_k_norm.weight",
    [LMS_LAYER_O] = "attn_output.weight",
    [LMS_LAYER_FFN_NORM] = "ffn_norm.weight",
    [LMS_LAYER_GATE] = "ffn_gate.weight",
    [LMS_LAYER_UP] = "ffn_up.weight",
    [LMS_LAYER_DOWN] = "ffn_down.weight",
};

static bool gguf_source_find(const void *ctx, const char *name, size_t *index)
{
    const gguf_file *f = ctx;
    const gguf_tensor *t = gguf_find_tensor(f, name);
    if (!t) return false;
    *index = (size_t)(t - gguf_tensor_at(f, 0));
    return true;
}

static void gguf_source_describe(const void *ctx, size_t index, lms_stored_tensor *out)
{
    const gguf_tensor *t = gguf_tensor_at(ctx, index);
    *out = (lms_stored_tensor){.name = t->name.ptr,
                               .name_len = t->name.len,
                               .type_name = gguf_ggml_type_name(t->type),
                               .n_dims = t->n_dims,
                               .data = t->data};
    /* ggml's ne[0] is the fastest-varying dimension: reverse to row-major. */
    for (uint32_t i = 0; i < t->n_dims; i++)
        out->dims[i] = t->ne[t->n_dims - 1 - i];
    out->convertible = lms_dtype_of_ggml(t->type, &out->dtype);
}

/* "{arch}.{suffix}" */
static const char *arch_key(char *buf, size_t size, const char *arch, const char *suffix)
{
    snprintf(buf, size, "%s.%s", arch, suffix);
    return buf;
}

static lms_status read_dim(const gguf_file *f, const char *arch, const char *suffix, int32_t *dst,
                           lms_error *err)
{
    char key[128];
    uint32_t v;
    lms_status st = gguf_get_u32(f, arch_key(key, sizeof key, arch, suffix), &v, err);
    return st == LMS_OK ? lms_model_set_dim(dst, key, v, err) : st;
}

/* Reads an optional dimension; *dst keeps its value when the key is absent. */
static lms_status read_optional_dim(const gguf_file *f, const char *arch, const char *suffix,
                                    int32_t *dst, lms_error *err)
{
    char key[128];
    if (!gguf_has_key(f, arch_key(key, sizeof key, arch, suffix))) return LMS_OK;
    return read_dim(f, arch, suffix, dst, err);
}

static lms_status read_optional_f32(const gguf_file *f, const char *arch, const char *suffix,
                                    float *dst, lms_error *err)
{
    char key[128];
    if (!gguf_has_key(f, arch_key(key, sizeof key, arch, suffix))) return LMS_OK;
    return gguf_get_f32(f, key, dst, err);
}

static lms_status read_arch(const gguf_file *f, lms_arch *arch, lms_error *err)
{
    static const struct {
        const char *name;
        lms_arch arch;
    } known[] = {{"llama", LMS_ARCH_LLAMA}, {"qwen2", LMS_ARCH_QWEN2}, {"qwen3", LMS_ARCH_QWEN3}};
    gguf_str s;
    lms_status st = gguf_get_str(f, "general.architecture", &s, err);
    if (st != LMS_OK) return st;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        if (s.len == strlen(known[i].name) && memcmp(s.ptr, known[i].name, s.len) == 0) {
            *arch = known[i].arch;
            return LMS_OK;
        }
    }
    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                    "architecture '%.*s' is not supported (llama, qwen2, qwen3 are)",
                    (int)(s.len > 64 ? 64 : s.len), s.ptr);
}

/* Linear position scaling: {arch}.rope.scaling.type "linear" with
 * .scaling.factor, or the older {arch}.rope.scale_linear. Llama-3-style
 * scaling arrives as rope_freqs.weight instead. */
static lms_status read_rope_scaling(const gguf_file *f, const char *arch, lms_model_config *c,
                                    lms_error *err)
{
    char key[128];
    if (!gguf_has_key(f, arch_key(key, sizeof key, arch, "rope.scaling.type")))
        return read_optional_f32(f, arch, "rope.scale_linear", &c->rope_scale_linear, err);
    gguf_str type;
    lms_status st = gguf_get_str(f, key, &type, err);
    if (st != LMS_OK) return st;
    if (type.len == 4 && memcmp(type.ptr, "none", 4) == 0) return LMS_OK;
    if (type.len == 6 && memcmp(type.ptr, "linear", 6) == 0)
        return gguf_get_f32(f, arch_key(key, sizeof key, arch, "rope.scaling.factor"),
                            &c->rope_scale_linear, err);
    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                    "%s = '%.*s' is not supported (none and linear are)", key,
                    (int)(type.len > 32 ? 32 : type.len), type.ptr);
}

/* Values that must agree with head_dim when present: the engine has no
 * separate value head size and rotates the whole head. */
static lms_status check_matches_head_dim(const gguf_file *f, const char *arch, const char *suffix,
                                         int32_t head_dim, lms_error *err)
{
    int32_t v = head_dim;
    lms_status st = read_optional_dim(f, arch, suffix, &v, err);
    if (st != LMS_OK) return st;
    if (v != head_dim)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "%s.%s = %d differs from the key length %d", arch, suffix, v, head_dim);
    return LMS_OK;
}

static lms_status read_config(const gguf_file *f, lms_model_config *c, lms_error *err)
{
    lms_status st = read_arch(f, &c->arch, err);
    if (st != LMS_OK) return st;
    const char *arch = lms_arch_name(c->arch);
    c->format = LMS_FORMAT_GGUF;
    /* llama.cpp converts llama with Q/K rows permuted for adjacent pairs. */
    c->rope_pairing = c->arch == LMS_ARCH_LLAMA ? LMS_ROPE_NORM : LMS_ROPE_NEOX;
    c->rope_theta = 10000.0f;
    if ((st = read_dim(f, arch, "block_count", &c->n_layers, err)) != LMS_OK ||
        (st = read_dim(f, arch, "embedding_length", &c->d_model, err)) != LMS_OK ||
        (st = read_dim(f, arch, "feed_forward_length", &c->d_ff, err)) != LMS_OK ||
        (st = read_dim(f, arch, "attention.head_count", &c->n_heads, err)) != LMS_OK ||
        (st = read_dim(f, arch, "context_length", &c->context_length, err)) != LMS_OK)
        return st;
    c->n_kv_heads = c->n_heads;
    c->head_dim = c->d_model / c->n_heads;
    char key[128];
    if (!gguf_has_key(f, arch_key(key, sizeof key, arch, "attention.key_length")) &&
        c->d_model % c->n_heads != 0)
        return lms_fail(
            err, LMS_ERR_FORMAT, NULL, NULL,
            "%s.embedding_length %d is not a multiple of head_count %d and %s is absent", arch,
            c->d_model, c->n_heads, key);
    if ((st = read_optional_dim(f, arch, "attention.head_count_kv", &c->n_kv_heads, err)) !=
            LMS_OK ||
        (st = read_optional_dim(f, arch, "attention.key_length", &c->head_dim, err)) != LMS_OK ||
        (st = read_optional_dim(f, arch, "vocab_size", &c->vocab_size, err)) != LMS_OK ||
        (st = check_matches_head_dim(f, arch, "attention.value_length", c->head_dim, err)) !=
            LMS_OK ||
        (st = check_matches_head_dim(f, arch, "rope.dimension_count", c->head_dim, err)) != LMS_OK)
        return st;
    st = gguf_get_f32(f, arch_key(key, sizeof key, arch, "attention.layer_norm_rms_epsilon"),
                      &c->rms_eps, err);
    if (st == LMS_OK) st = read_optional_f32(f, arch, "rope.freq_base", &c->rope_theta, err);
    if (st == LMS_OK) st = read_rope_scaling(f, arch, c, err);
    return st;
}

lms_status lms_model_load_gguf(lms_model *model, const char *path, const lms_stop *stop,
                               lms_error *err)
{
    lms_status st = gguf_open(path, &model->gguf, err);
    if (st != LMS_OK) return st;
    const gguf_file *f = model->gguf;
    st = read_config(f, &model->cfg, err);
    if (st == LMS_OK) {
        gguf_str name = {NULL, 0};
        if (gguf_has_key(f, "general.name")) st = gguf_get_str(f, "general.name", &name, err);
        lms_model_set_name(model, name.ptr, name.len, path);
    }
    if (st == LMS_OK) {
        const lms_tensor_source src = {
            .format = "GGUF",
            .global_names = gguf_global_names,
            .layer_prefix = "blk.",
            .layer_names = gguf_layer_names,
            .n_tensors = (size_t)gguf_tensor_count(f),
            .find = gguf_source_find,
            .describe = gguf_source_describe,
            .ctx = f,
            .file_backed = true,
        };
        st = lms_model_bind(model, &src, stop, err);
    }
    if (st != LMS_OK) lms_fail_context(err, "%s", path);
    return st;
}
