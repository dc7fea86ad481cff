/*
 * model.h — a loaded transformer checkpoint: its geometry and its weights.
 *
 * lms_model_load() accepts a GGUF file or a Hugging Face directory
 * (config.json + model.safetensors or sharded model-*.safetensors with
 * model.safetensors.index.json). The projection matrices and the embedding
 * are lms_weights (weights.h) in the PyTorch (out_features, in_features)
 * layout — GGUF's ne[0] is the in-feature dimension — so every projection is
 * y = x · Wᵀ; their format follows the precision asked for (lmscore.h's
 * lms_precision). F32 matrices are used in place from the file when they
 * can be, the other formats are packed at load. Norms, biases and RoPE
 * factors are f32 vectors.
 *
 * RoPE pairing: Hugging Face checkpoints of every family, and GGUF qwen2/qwen3,
 * rotate the pairs (i, i + head_dim/2) ("NEOX"); llama.cpp permutes llama's
 * Q/K rows when it writes a GGUF, so GGUF llama rotates adjacent pairs
 * (2i, 2i+1) ("NORM"). The loader records which one the weights need.
 */
#ifndef LMS_MODEL_H
#define LMS_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"
#include "weights.h"

typedef enum {
    LMS_ARCH_LLAMA = 1,
    LMS_ARCH_QWEN2 = 2, /* llama + bias on q/k/v */
    LMS_ARCH_QWEN3 = 3, /* llama + RMSNorm on each head of q and k, no bias */
} lms_arch;

typedef enum {
    LMS_ROPE_NORM = 0, /* rotate (2i, 2i+1) */
    LMS_ROPE_NEOX = 1, /* rotate (i, i + head_dim/2) */
} lms_rope_pairing;

typedef enum {
    LMS_FORMAT_GGUF = 1,
    LMS_FORMAT_HF = 2,
} lms_model_format;

typedef struct {
    lms_arch arch;
    lms_model_format format;
    char name[128]; /* general.name, or the directory's basename */
    int32_t n_layers;
    int32_t d_model;
    int32_t n_heads;
    int32_t n_kv_heads;
    int32_t head_dim;
    int32_t d_ff;
    int32_t vocab_size;
    int32_t context_length;
    float rms_eps;
    float rope_theta;
    lms_rope_pairing rope_pairing;
    /* Position scaling: angle = (pos / rope_scale_linear) * theta^(-2i/d) /
     * rope_freq_factors[i]. rope_scale_linear is 1 when absent;
     * rope_freq_factors (head_dim/2 floats, llama3-style scaling from
     * rope_freqs.weight or config.json's rope_scaling) is NULL when absent. */
    float rope_scale_linear;
    const float *rope_freq_factors;
    int tied_embeddings; /* output == tok_embd */
} lms_model_config;

typedef struct {
    const float *attn_norm;       /* [d_model] */
    lms_weights wq;               /* [n_heads*head_dim, d_model] */
    lms_weights wk, wv;           /* [n_kv_heads*head_dim, d_model] */
    const float *bq, *bk, *bv;    /* qwen2 only, else NULL */
    const float *q_norm, *k_norm; /* [head_dim], qwen3 only, else NULL */
    lms_weights wo;               /* [d_model, n_heads*head_dim] */
    const float *ffn_norm;        /* [d_model] */
    lms_weights w_gate, w_up;     /* [d_ff, d_model] */
    lms_weights w_down;           /* [d_model, d_ff] */
} lms_layer_weights;

struct gguf_file;

typedef struct lms_model {
    lms_model_config cfg;
    lms_weights tok_embd;      /* [vocab_size, d_model] */
    const float *output_norm;  /* [d_model] */
    lms_weights output;        /* [vocab_size, d_model]; the same matrix as tok_embd when tied */
    lms_layer_weights *layers; /* [n_layers] */

    const char *precision;      /* "f32", "bf16", "int8", "mixed": what the matrices hold */
    char precision_reason[200]; /* why */

    /* Where the model came from, for the tokenizer loader: exactly one of
     * these is set. Owned by the model. */
    struct gguf_file *gguf;
    char *hf_dir;

    struct lms_model_storage *storage; /* private: buffers and mappings */
} lms_model;

typedef struct {
    lms_precision precision;
    bool low_precision; /* the CPU runs the 16-bit and Q8 kernels (AVX2, FMA, F16C) */
    lms_stop stop;      /* polled while weights are converted and packed */
} lms_load_options;

/* opt NULL: f32 matrices, nothing polled. */
lms_status lms_model_load(const char *path, const lms_load_options *opt, lms_model **out,
                          lms_error *err);

/* The matrices a model of n_layers holds at most: embedding, head, and
 * seven per layer. */
#define LMS_MODEL_MATRICES(n_layers) (2 + 7 * (size_t)(n_layers))
/* Fills out (room for LMS_MODEL_MATRICES) with the model's distinct
 * matrices — the head only when it is not the embedding; returns how many. */
int32_t lms_model_matrices(const lms_model *m, const lms_weights **out);
void lms_model_free(lms_model *model);

const char *lms_arch_name(lms_arch arch);

#endif
