/*
 * model_bind.h — the format-independent half of loading a model, below the
 * format front-ends (model_gguf.c, model_hf.c).
 *
 * A front-end fills lms_model_config from its metadata and describes its
 * tensors through an lms_tensor_source; lms_model_bind then checks the
 * geometry, finds every weight the architecture needs under the format's
 * names, checks each shape against the geometry, converts the vectors to
 * f32, hands the matrices over as stored (lms_matrix) and rejects tensors
 * that no slot consumed.
 */
#ifndef LMS_MODEL_BIND_H
#define LMS_MODEL_BIND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "safetensors.h"
#include "tensor_convert.h"

/* Buffers and files a loaded model keeps alive; freed by lms_model_free. */
struct lms_model_storage {
    void **buffers; /* lms_alloc'ed: converted vectors, computed rope factors */
    size_t n_buffers, cap_buffers;
    safetensors_file **shards; /* HF: F32 weights point into their mappings */
    size_t n_shards;
};

typedef enum {
    LMS_GLOBAL_TOK_EMBD,
    LMS_GLOBAL_OUTPUT_NORM,
    LMS_GLOBAL_OUTPUT,
    LMS_GLOBAL_ROPE_FREQS,
    LMS_GLOBAL_COUNT
} lms_global_slot;

typedef enum {
    LMS_LAYER_ATTN_NORM,
    LMS_LAYER_Q,
    LMS_LAYER_K,
    LMS_LAYER_V,
    LMS_LAYER_Q_BIAS,
    LMS_LAYER_K_BIAS,
    LMS_LAYER_V_BIAS,
    LMS_LAYER_Q_NORM,
    LMS_LAYER_K_NORM,
    LMS_LAYER_O,
    LMS_LAYER_FFN_NORM,
    LMS_LAYER_GATE,
    LMS_LAYER_UP,
    LMS_LAYER_DOWN,
    LMS_LAYER_COUNT
} lms_layer_slot;

#define LMS_STORED_MAX_DIMS 8

/* A tensor as the checkpoint stores it. */
typedef struct {
    const char *name; /* not necessarily NUL-terminated */
    size_t name_len;
    bool convertible; /* stored as one of the lms_dtype types */
    lms_dtype dtype;
    const char *type_name; /* as the format calls it, for messages */
    uint32_t n_dims;
    uint64_t dims[LMS_STORED_MAX_DIMS]; /* row-major: dims[n_dims-1] varies fastest */
    const void *data;
} lms_stored_tensor;

/* How a format names the weights and looks its tensors up. Tensors are
 * numbered 0..n_tensors-1. */
typedef struct {
    const char *format;              /* "GGUF", "safetensors" */
    const char *const *global_names; /* [LMS_GLOBAL_COUNT]; NULL: none */
    const char *layer_prefix;        /* a layer's names: prefix N "." name */
    const char *const *layer_names;  /* [LMS_LAYER_COUNT] */
    size_t n_tensors;
    bool (*find)(const void *ctx, const char *name, size_t *index);
    void (*describe)(const void *ctx, size_t index, lms_stored_tensor *out);
    const void *ctx;
    /* Tensor data lies in read-only file mappings: a tensor's pages may be
     * dropped from memory once it is packed (they read back from the file). */
    bool file_backed;
} lms_tensor_source;

/* An empty model with its storage, for a front-end to fill; free it with
 * lms_model_free. */
lms_status lms_model_create(lms_model **out, lms_error *err);

/* Stores a geometry value read as `key`, which must be in 1..INT32_MAX. */
lms_status lms_model_set_dim(int32_t *dst, const char *key, int64_t value, lms_error *err);
/* Copies up to len bytes of name into cfg.name; the basename of path when
 * name is NULL. */
void lms_model_set_name(lms_model *model, const char *name, size_t len, const char *path);
/* Hands an lms_alloc'ed buffer to the model (freed with it; freed now on
 * failure). */
lms_status lms_model_keep(lms_model *model, void *buffer, lms_error *err);
/* Checks the geometry, then fills tok_embd, output_norm, output, layers and
 * cfg.rope_freq_factors / cfg.tied_embeddings from src. A config with
 * tied_embeddings already set ignores the output tensor if present. stop
 * (may be NULL) is polled while stored vectors are converted. */
lms_status lms_model_bind(lms_model *model, const lms_tensor_source *src, const lms_stop *stop,
                          lms_error *err);

#endif
