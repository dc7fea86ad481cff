/*
 * mm_spec.h — what the model maker is asked to build: architecture, geometry,
 * numeric type, seed, rope scaling and tokenizer, with the named presets.
 */
#ifndef MM_SPEC_H
#define MM_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"
#include "mm_dtype.h"

typedef enum {
    MM_ARCH_LLAMA,
    MM_ARCH_QWEN2, /* llama + bias on q/k/v */
    MM_ARCH_QWEN3, /* llama + RMSNorm on every head of q and k */
} mm_arch;

typedef enum {
    MM_ROPE_SCALING_NONE,
    MM_ROPE_SCALING_LINEAR, /* positions divided by factor */
    MM_ROPE_SCALING_LLAMA3, /* Llama 3.1's per-frequency band rule */
} mm_rope_scaling;

typedef struct {
    char name[64]; /* general.name; also names the files in the build */
    mm_arch arch;
    int32_t n_layers, d_model, d_ff;       /* transformer blocks, hidden and FFN widths */
    int32_t n_heads, n_kv_heads, head_dim; /* attention heads (query, key/value), width */
    int32_t vocab_size;                    /* embedding rows; 0 = the tokenizer's token count */
    int32_t context_length;
    double rms_eps;
    double rope_theta;
    bool tied_embeddings;
    mm_dtype dtype;
    uint64_t seed;
    /* The std the q, k, v, o, gate, up and down matrices are drawn at; 0:
     * 1/sqrt(fan_in) each (see tensors.c). */
    double projection_std;

    mm_rope_scaling rope_scaling;
    double rope_factor;
    double rope_low_freq_factor;   /* llama3 only */
    double rope_high_freq_factor;  /* llama3 only */
    int32_t rope_original_context; /* llama3 only */

    /* A name under the tokenizers root (qwen3, llama3, llama2) or, when it
     * contains a '/', a directory holding tokenizer.json. */
    char tokenizer[512];
    /* tokenizer.ggml.pre for byte-level BPE (llama.cpp picks its regex by
     * it); empty for SentencePiece tokenizers. */
    char tokenizer_pre[32];
    /* The BOS token when tokenizer_config.json names none but the model's
     * config.json has one (Qwen: <|endoftext|>); empty otherwise. */
    char fallback_bos[64];

    int32_t hf_shards; /* 1 = model.safetensors; N = sharded with an index */
} mm_spec;

/* Fills *out with a preset: tiny-qwen3, tiny-qwen2, tiny-llama, tiny-llama3,
 * qwen3-0.6b, qwen3-4b, qwen3-8b. Unknown names fail with the list of known
 * ones. */
lms_status mm_spec_preset(const char *name, mm_spec *out, lms_error *err);

/* Checks that the geometry is buildable (positive sizes, heads divisible by
 * KV heads, even head_dim, sane rope scaling). */
lms_status mm_spec_validate(const mm_spec *spec, lms_error *err);

const char *mm_arch_name(mm_arch arch); /* "llama", "qwen2", "qwen3" */
lms_status mm_arch_parse(const char *text, mm_arch *out, lms_error *err);
lms_status mm_rope_scaling_parse(const char *text, mm_rope_scaling *out, lms_error *err);

/* The dtype of the Hugging Face twin: the GGUF's, except f32 for the block
 * types. All weights are rounded to it, so both files hold the same
 * numbers. */
mm_dtype mm_spec_checkpoint_dtype(const mm_spec *spec);

#endif
