/*
 * tensors.c — the tensor inventory of llama / qwen2 / qwen3 checkpoints, with
 * the names both ecosystems use and the scale each tensor is drawn at.
 *
 * Scales keep activations O(1) so scores are informative: projections have
 * std 1/sqrt(fan_in) (each preserves the RMS of its input) unless the spec
 * sets projection_std, embedding and output rows std 4/sqrt(d_model) (logits
 * of std ~4 after the final norm), norm weights 1 +- 0.1 and biases std 0.2.
 */
#include "mm_tensors.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct {
    mm_tensor *items;
    size_t n, cap;
} tensor_list;

/* rows == 0 makes a 1-D tensor of cols elements. */
static mm_tensor *add(tensor_list *list, const char *hf_name, const char *gguf_name, int64_t rows,
                      int64_t cols)
{
    mm_tensor *t = &list->items[list->n++];
    snprintf(t->hf_name, sizeof t->hf_name, "%s", hf_name);
    snprintf(t->gguf_name, sizeof t->gguf_name, "%s", gguf_name);
    t->n_dims = rows == 0 ? 1 : 2;
    t->rows = rows == 0 ? 1 : rows;
    t->cols = cols;
    t->init = MM_INIT_GAUSSIAN;
    t->mean = 0.0;
    t->std = 1.0 / sqrt((double)cols);
    t->permute_heads = 0;
    t->keep_f32 = t->n_dims == 1;
    return t;
}

/* A q, k, v, o, gate, up or down matrix: rows = out-features. */
static mm_tensor *add_projection(tensor_list *list, const mm_spec *s, const char *hf_name,
                                 const char *gguf_name, int64_t rows, int64_t cols)
{
    mm_tensor *t = add(list, hf_name, gguf_name, rows, cols);
    if (s->projection_std > 0) t->std = s->projection_std;
    return t;
}

static void add_norm(tensor_list *list, const char *hf_name, const char *gguf_name, int64_t n)
{
    mm_tensor *t = add(list, hf_name, gguf_name, 0, n);
    t->mean = 1.0;
    t->std = 0.1;
}

static void add_layer(tensor_list *list, const mm_spec *s, int layer)
{
    const int64_t q_dim = (int64_t)s->n_heads * s->head_dim;
    const int64_t kv_dim = (int64_t)s->n_kv_heads * s->head_dim;
    const bool llama = s->arch == MM_ARCH_LLAMA;
    char hf[80], gg[48];
#define NAMES(hf_part, gguf_part)                                                                  \
    (snprintf(hf, sizeof hf, "model.layers.%d.%s", layer, hf_part),                                \
     snprintf(gg, sizeof gg, "blk.%d.%s", layer, gguf_part))

    NAMES("input_layernorm.weight", "attn_norm.weight");
    add_norm(list, hf, gg, s->d_model);
    NAMES("self_attn.q_proj.weight", "attn_q.weight");
    add_projection(list, s, hf, gg, q_dim, s->d_model)->permute_heads = llama ? s->n_heads : 0;
    NAMES("self_attn.k_proj.weight", "attn_k.weight");
    add_projection(list, s, hf, gg, kv_dim, s->d_model)->permute_heads = llama ? s->n_kv_heads : 0;
    NAMES("self_attn.v_proj.weight", "attn_v.weight");
    add_projection(list, s, hf, gg, kv_dim, s->d_model);
    if (s->arch == MM_ARCH_QWEN2) {
        static const char *const proj[] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) {
            char hf_part[32], gguf_part[32];
            snprintf(hf_part, sizeof hf_part, "self_attn.%s_proj.bias", proj[i]);
            snprintf(gguf_part, sizeof gguf_part, "attn_%s.bias", proj[i]);
            NAMES(hf_part, gguf_part);
            add(list, hf, gg, 0, i == 0 ? q_dim : kv_dim)->std = 0.2;
        }
    }
    if (s->arch == MM_ARCH_QWEN3) {
        NAMES("self_attn.q_norm.weight", "attn_q_norm.weight");
        add_norm(list, hf, gg, s->head_dim);
        NAMES("self_attn.k_norm.weight", "attn_k_norm.weight");
        add_norm(list, hf, gg, s->head_dim);
    }
    NAMES("self_attn.o_proj.weight", "attn_output.weight");
    add_projection(list, s, hf, gg, s->d_model, q_dim);
    NAMES("post_attention_layernorm.weight", "ffn_norm.weight");
    add_norm(list, hf, gg, s->d_model);
    NAMES("mlp.gate_proj.weight", "ffn_gate.weight");
    add_projection(list, s, hf, gg, s->d_ff, s->d_model);
    NAMES("mlp.up_proj.weight", "ffn_up.weight");
    add_projection(list, s, hf, gg, s->d_ff, s->d_model);
    NAMES("mlp.down_proj.weight", "ffn_down.weight");
    add_projection(list, s, hf, gg, s->d_model, s->d_ff);
#undef NAMES
}

lms_status mm_tensors_list(const mm_spec *s, mm_tensor **out, size_t *n, lms_error *err)
{
    const size_t per_layer = 16; /* more than any architecture has */
    tensor_list list = {.cap = 5 + per_layer * (size_t)s->n_layers};
    list.items = calloc(list.cap, sizeof *list.items);
    if (!list.items)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %zu tensors", list.cap);

    if (s->rope_scaling == MM_ROPE_SCALING_LLAMA3) {
        mm_tensor *t = add(&list, "", "rope_freqs.weight", 0, s->head_dim / 2);
        t->init = MM_INIT_ROPE_FREQS;
    }
    const double embd_std = 4.0 / sqrt((double)s->d_model);
    add(&list, "model.embed_tokens.weight", "token_embd.weight", s->vocab_size, s->d_model)->std =
        embd_std;
    for (int layer = 0; layer < s->n_layers; layer++)
        add_layer(&list, s, layer);
    add_norm(&list, "model.norm.weight", "output_norm.weight", s->d_model);
    if (!s->tied_embeddings)
        add(&list, "lm_head.weight", "output.weight", s->vocab_size, s->d_model)->std = embd_std;

    *out = list.items;
    *n = list.n;
    return LMS_OK;
}
