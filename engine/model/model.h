/*
 * model.h — a loaded transformer checkpoint: its geometry and its weights.
 *
 * lms_model_load() accepts a GGUF file or a Hugging Face directory
 * (config.json + model.safetensors or sharded model-*.safetensors with
 * model.safetensors.index.json). The projection matrices and the embedding
 * are handed over as the checkpoint stores them (lms_matrix: the stored
 * type and the bytes, in place in the file's mapping), in the PyTorch
 * (out_features, in_features) layout — GGUF's ne[0] is the in-feature
 * dimension — so every projection is y = x · Wᵀ; the compute layer puts
 * them in the formats its kernels read (compute/model_weights.h). Norms,
 * biases and RoPE factors are f32 vectors.
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

#include "dtype.h"
#include "lmscore.h"

/* The widest attention head the engine computes: forward.c's RoPE tables
 * and attention.c's 16-bit K/V rows are stack arrays of this size. A model
 * with a wider head is refused at load (model_bind.c), before its weights
 * are packed. */
#define LMS_MAX_HEAD_DIM 1024

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

/* A matrix as the checkpoint stores it: n × k (out_features ×
 * in_features) values of type, row-major, at data (any byte address; a
 * block type's rows are whole blocks). n is 0 for a matrix the checkpoint
 * does not have. */
typedef struct {
    lms_dtype type;
    const void *data;
    int32_t n, k;
} lms_matrix;

typedef struct {
    const float *attn_norm;       /* [d_model] */
    lms_matrix wq;                /* [n_heads*head_dim, d_model] */
    lms_matrix wk, wv;            /* [n_kv_heads*head_dim, d_model] */
    const float *bq, *bk, *bv;    /* qwen2 only, else NULL */
    const float *q_norm, *k_norm; /* [head_dim], qwen3 only, else NULL */
    lms_matrix wo;                /* [d_model, n_heads*head_dim] */
    const float *ffn_norm;        /* [d_model] */
    lms_matrix w_gate, w_up;      /* [d_ff, d_model] */
    lms_matrix w_down;            /* [d_model, d_ff] */
} lms_layer_weights;

struct gguf_file;

typedef struct lms_model {
    lms_model_config cfg;
    lms_matrix tok_embd;       /* [vocab_size, d_model] */
    const float *output_norm;  /* [d_model] */
    lms_matrix output;         /* [vocab_size, d_model]; the same matrix as tok_embd when tied */
    lms_layer_weights *layers; /* [n_layers] */
    /* The matrices lie in read-only file mappings: the pages of one may be
     * dropped from memory once it is packed (they read back from the file). */
    bool file_backed;

    /* Where the model came from, for the tokenizer loader: exactly one of
     * these is set. Owned by the model. */
    struct gguf_file *gguf;
    char *hf_dir;

    struct lms_model_storage *storage; /* private: buffers and mappings */
} lms_model;

/* stop (may be NULL) is polled while stored vectors are converted to f32. */
lms_status lms_model_load(const char *path, const lms_stop *stop, lms_model **out, lms_error *err);
void lms_model_free(lms_model *model);

const char *lms_arch_name(lms_arch arch);

#endif
