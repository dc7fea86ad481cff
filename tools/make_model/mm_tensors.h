/*
 * mm_tensors.h — the tensor inventory of a model: every tensor's Hugging Face
 * and GGUF names, shape, how its values are drawn, and how llama.cpp lays it
 * out in a GGUF.
 */
#ifndef MM_TENSORS_H
#define MM_TENSORS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mm_spec.h"
#include "lmscore.h"

typedef enum {
    MM_INIT_GAUSSIAN,   /* mean + std * z, z normal-ish (see mm_weights.h) */
    MM_INIT_ROPE_FREQS, /* llama3 rope factors computed from the spec (GGUF only) */
} mm_init;

typedef struct {
    char hf_name[80]; /* empty for GGUF-only tensors */
    char gguf_name[48];
    int n_dims;   /* 1 or 2 */
    int64_t rows; /* PyTorch shape [rows, cols]; 1 for 1-D tensors */
    int64_t cols; /* in-features: GGUF ne[0] */
    mm_init init;
    double mean, std;
    /* > 0: llama.cpp's LlamaModel.permute with this many heads reorders the
     * rows in the GGUF so that interleaved RoPE equals HF's rotate_half. */
    int32_t permute_heads;
    /* Norms, biases and rope factors stay F32 in a GGUF whatever the dtype. */
    bool keep_f32;
} mm_tensor;

/* The model's tensors in GGUF order (rope_freqs, token_embd, blocks in
 * order, output_norm, output). *out is malloc'ed, owned by the caller. */
lms_status mm_tensors_list(const mm_spec *spec, mm_tensor **out, size_t *n, lms_error *err);

static inline int64_t mm_tensor_elements(const mm_tensor *t)
{
    return t->rows * t->cols;
}

#endif
