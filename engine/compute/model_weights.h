/*
 * model_weights.h — a model's matrices as a compute tier multiplies them:
 * each stored matrix (model.h's lms_matrix) in the format (weights.h) that
 * the precision asks for and the tier multiplies, made once when an engine
 * opens.
 *
 * The format of a matrix stored as type:
 *
 *   precision  F32, F16/BF16 stored  block types (Q8_0 ... Q6_K)
 *   f32        F32                   F32 (dequantised)
 *   bf16,      F16 for f16, else BF16, with one or two bf16 values per
 *   bf16x2     activation value on a tier with bf16 activations (x_codes:
 *              in bf16, two for q, k and the LM head)
 *   int8,      Q8 (floats as ggml's Q8_0 quantiser makes them, blocks exactly),
 *   int8x2     with one or two codes per activation value (x_codes)
 *   auto       as stored: F32, F16, BF16  Q8
 *
 * and F32 wherever the tier multiplies no other format. Every matrix is
 * packed (weights_pack.h) in parallel, the file's pages of each piece
 * dropped once packed, so a load holds the packed weights and not also the
 * file.
 */
#ifndef LMS_MODEL_WEIGHTS_H
#define LMS_MODEL_WEIGHTS_H

#include "lmscore.h"
#include "model.h"
#include "tier.h"
#include "weights.h"

typedef struct {
    lms_weights wq, wk, wv, wo, w_gate, w_up, w_down;
} layer_weights;

typedef struct model_weights {
    lms_weights tok_embd;  /* [vocab_size, d_model] */
    lms_weights output;    /* the same matrix as tok_embd when the model ties them */
    layer_weights *layers; /* [n_layers] */
    int32_t n_layers;
    bool tied;

    const char *precision;      /* "f32", "bf16", "bf16x2", "int8", "int8x2", "mixed" */
    char precision_reason[200]; /* why: the option, the stored types, the tier */

    void **buffers; /* lms_alloc'ed: the packed matrices */
    size_t n_buffers;
} model_weights;

/* The matrices of m for tier in precision. stop (may be NULL) is polled
 * while they are converted and packed; once it says stop, the call fails
 * with LMS_ERR_CANCELLED and frees what it made. *out is freed with
 * model_weights_free, before m. */
lms_status model_weights_create(const lms_model *m, const compute_tier *tier,
                                lms_precision precision, const lms_stop *stop, model_weights **out,
                                lms_error *err);
void model_weights_free(model_weights *w);

/* The matrices a model of n_layers holds at most: embedding, head, and
 * seven per layer. */
#define MODEL_WEIGHTS_MAX(n_layers) (2 + 7 * (size_t)(n_layers))
/* Fills out (room for MODEL_WEIGHTS_MAX) with w's distinct matrices — the
 * head only when it is not the embedding; returns how many. */
int32_t model_weights_list(const model_weights *w, const lms_weights **out);

#endif
