/*
 * model_bind.c — the format-independent part of loading a model
 * (model_bind.h): geometry checks, weight lookup by slot, shape checks
 * against the geometry, the vectors' conversion to f32, the matrices handed
 * over as stored, and the model's lifetime.
 */
#include "model_bind.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "gguf.h"

const char *lms_arch_name(lms_arch arch)
{
    switch (arch) {
    case LMS_ARCH_LLAMA:
        return "llama";
    case LMS_ARCH_QWEN2:
        return "qwen2";
    case LMS_ARCH_QWEN3:
        return "qwen3";
    }
    return "unknown";
}

lms_status lms_model_set_dim(int32_t *dst, const char *key, int64_t value, lms_error *err)
{
    if (value < 1 || value > INT32_MAX)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "%s = %" PRId64 " is outside 1..%d", key,
                        value, INT32_MAX);
    *dst = (int32_t)value;
    return LMS_OK;
}

void lms_model_set_name(lms_model *model, const char *name, size_t len, const char *path)
{
    if (!name) {
        /* The last path component, ignoring trailing slashes. */
        size_t end = strlen(path);
        while (end > 1 && path[end - 1] == '/')
            end--;
        size_t start = end;
        while (start > 0 && path[start - 1] != '/')
            start--;
        name = path + start;
        len = end - start;
    }
    if (len >= sizeof model->cfg.name) len = sizeof model->cfg.name - 1;
    memcpy(model->cfg.name, name, len);
    model->cfg.name[len] = '\0';
}

lms_status lms_model_keep(lms_model *model, void *buffer, lms_error *err)
{
    struct lms_model_storage *s = model->storage;
    if (s->n_buffers == s->cap_buffers) {
        size_t cap = s->cap_buffers ? 2 * s->cap_buffers : 64;
        void **grown = realloc(s->buffers, cap * sizeof *grown);
        if (!grown) {
            lms_free(buffer);
            return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "model buffer list");
        }
        s->buffers = grown;
        s->cap_buffers = cap;
    }
    s->buffers[s->n_buffers++] = buffer;
    return LMS_OK;
}

static lms_status check_config(const lms_model_config *c, lms_error *err)
{
    if (c->n_layers < 1 || c->d_model < 1 || c->n_heads < 1 || c->n_kv_heads < 1 ||
        c->head_dim < 1 || c->d_ff < 1 || c->context_length < 1 || c->vocab_size < 0)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "a front-end left a dimension unset");
    if (c->n_heads % c->n_kv_heads != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "%d attention heads are not a multiple of %d KV heads", c->n_heads,
                        c->n_kv_heads);
    if (c->head_dim % 2 != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "head_dim %d is odd; RoPE needs pairs",
                        c->head_dim);
    if (c->head_dim > LMS_MAX_HEAD_DIM)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL, "head_dim %d: must be at most %d",
                        c->head_dim, LMS_MAX_HEAD_DIM);
    if ((int64_t)c->n_heads * c->head_dim > INT32_MAX)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "n_heads %d x head_dim %d is too large",
                        c->n_heads, c->head_dim);
    if (!(isfinite(c->rms_eps) && c->rms_eps > 0))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "RMSNorm epsilon %g is not positive",
                        c->rms_eps);
    if (!(isfinite(c->rope_theta) && c->rope_theta > 0))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "rope theta %g is not positive",
                        c->rope_theta);
    if (!(isfinite(c->rope_scale_linear) && c->rope_scale_linear > 0))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "rope scaling factor %g is not positive",
                        c->rope_scale_linear);
    return LMS_OK;
}

typedef enum { SLOT_ABSENT, SLOT_OPTIONAL, SLOT_REQUIRED } slot_need;

static slot_need layer_need(lms_arch arch, lms_layer_slot slot)
{
    switch (slot) {
    case LMS_LAYER_Q_BIAS:
    case LMS_LAYER_K_BIAS:
    case LMS_LAYER_V_BIAS:
        return arch == LMS_ARCH_QWEN2 ? SLOT_REQUIRED : SLOT_ABSENT;
    case LMS_LAYER_Q_NORM:
    case LMS_LAYER_K_NORM:
        return arch == LMS_ARCH_QWEN3 ? SLOT_REQUIRED : SLOT_ABSENT;
    default:
        return SLOT_REQUIRED;
    }
}

/* The shape a slot must have, row-major (out_features first). */
typedef struct {
    uint32_t n_dims;
    uint64_t dims[2];
    const char *meaning; /* for messages */
} slot_shape;

static slot_shape global_shape(const lms_model_config *c, lms_global_slot slot)
{
    switch (slot) {
    case LMS_GLOBAL_TOK_EMBD:
    case LMS_GLOBAL_OUTPUT:
        return (slot_shape){2, {(uint64_t)c->vocab_size, (uint64_t)c->d_model}, "vocab, d_model"};
    case LMS_GLOBAL_OUTPUT_NORM:
        return (slot_shape){1, {(uint64_t)c->d_model}, "d_model"};
    case LMS_GLOBAL_ROPE_FREQS:
        return (slot_shape){1, {(uint64_t)c->head_dim / 2}, "head_dim/2"};
    case LMS_GLOBAL_COUNT:
        break;
    }
    return (slot_shape){0, {0}, ""};
}

static slot_shape layer_shape(const lms_model_config *c, lms_layer_slot slot)
{
    const uint64_t d = (uint64_t)c->d_model, ff = (uint64_t)c->d_ff;
    const uint64_t q = (uint64_t)c->n_heads * (uint64_t)c->head_dim;
    const uint64_t kv = (uint64_t)c->n_kv_heads * (uint64_t)c->head_dim;
    switch (slot) {
    case LMS_LAYER_ATTN_NORM:
    case LMS_LAYER_FFN_NORM:
        return (slot_shape){1, {d}, "d_model"};
    case LMS_LAYER_Q:
        return (slot_shape){2, {q, d}, "n_heads*head_dim, d_model"};
    case LMS_LAYER_K:
    case LMS_LAYER_V:
        return (slot_shape){2, {kv, d}, "n_kv_heads*head_dim, d_model"};
    case LMS_LAYER_Q_BIAS:
        return (slot_shape){1, {q}, "n_heads*head_dim"};
    case LMS_LAYER_K_BIAS:
    case LMS_LAYER_V_BIAS:
        return (slot_shape){1, {kv}, "n_kv_heads*head_dim"};
    case LMS_LAYER_Q_NORM:
    case LMS_LAYER_K_NORM:
        return (slot_shape){1, {(uint64_t)c->head_dim}, "head_dim"};
    case LMS_LAYER_O:
        return (slot_shape){2, {d, q}, "d_model, n_heads*head_dim"};
    case LMS_LAYER_GATE:
    case LMS_LAYER_UP:
        return (slot_shape){2, {ff, d}, "d_ff, d_model"};
    case LMS_LAYER_DOWN:
        return (slot_shape){2, {d, ff}, "d_model, d_ff"};
    case LMS_LAYER_COUNT:
        break;
    }
    return (slot_shape){0, {0}, ""};
}

static void format_dims(char *buf, size_t size, uint32_t n_dims, const uint64_t *dims)
{
    size_t used = (size_t)snprintf(buf, size, "[");
    for (uint32_t i = 0; i < n_dims && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s%" PRIu64, i ? ", " : "", dims[i]);
    if (used < size) snprintf(buf + used, size - used, "]");
}

typedef struct {
    lms_model *model;
    const lms_tensor_source *src;
    unsigned char *used;   /* [src->n_tensors] */
    lms_convert_job *jobs; /* conversions, run together once everything is bound */
    size_t n_jobs, cap_jobs;
} binder;

/* Grows *array (of elem bytes each) so that one more fits. */
static lms_status reserve_one(void **array, size_t n, size_t *cap, size_t elem, lms_error *err)
{
    if (n < *cap) return LMS_OK;
    size_t grown_cap = *cap ? 2 * *cap : 256;
    void *grown = realloc(*array, grown_cap * elem);
    if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "weight job list");
    *array = grown;
    *cap = grown_cap;
    return LMS_OK;
}

static bool shape_matches(const lms_stored_tensor *t, const slot_shape *want)
{
    if (t->n_dims != want->n_dims) return false;
    for (uint32_t i = 0; i < want->n_dims; i++)
        if (t->dims[i] != want->dims[i]) return false;
    return true;
}

/* Points *out at the f32 data of the tensor called name: in place when it
 * is f32 and aligned, else a buffer owned by the model that a conversion
 * job fills. */
static lms_status tensor_as_f32(binder *b, const char *name, const lms_stored_tensor *t,
                                const slot_shape *shape, const float **out, lms_error *err)
{
    size_t n = 1;
    for (uint32_t i = 0; i < shape->n_dims; i++)
        n *= (size_t)shape->dims[i];
    if (t->dtype == LMS_DTYPE_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
        *out = t->data;
        return LMS_OK;
    }
    lms_status st = reserve_one((void **)&b->jobs, b->n_jobs, &b->cap_jobs, sizeof *b->jobs, err);
    if (st != LMS_OK) return st;
    if (n > SIZE_MAX / sizeof(float))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tensor '%s' is too large", name);
    float *converted = lms_alloc(n * sizeof(float));
    if (!converted)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "converting tensor '%s' (%zu bytes)", name,
                        n * sizeof(float));
    b->jobs[b->n_jobs++] = (lms_convert_job){t->dtype, t->data, converted, n};
    *out = converted;
    return lms_model_keep(b->model, converted, err);
}

/* Finds the tensor called name and checks that it can be loaded with the
 * slot's shape. *found is false when it is missing and not required. */
static lms_status find_tensor(binder *b, const char *name, const slot_shape *shape, bool required,
                              lms_stored_tensor *t, bool *found, lms_error *err)
{
    *found = false;
    size_t index;
    if (!b->src->find(b->src->ctx, name, &index)) {
        if (!required) return LMS_OK;
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tensor '%s' is missing (a %s model needs it)", name,
                        lms_arch_name(b->model->cfg.arch));
    }
    b->used[index] = 1;
    b->src->describe(b->src->ctx, index, t);
    if (!t->convertible)
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "tensor '%s' is stored as %s; f32, f16, bf16, q4_0, q4_1, q5_0, q5_1, "
                        "q8_0, q4_K, q5_K and q6_K can be loaded",
                        name, t->type_name);
    if (!shape_matches(t, shape)) {
        char have[160], want[80];
        format_dims(have, sizeof have, t->n_dims, t->dims);
        format_dims(want, sizeof want, shape->n_dims, shape->dims);
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tensor '%s' has shape %s, expected %s (%s)", name, have, want,
                        shape->meaning);
    }
    *found = true;
    return LMS_OK;
}

/* Binds the f32 vector called name to *out; a missing tensor is an error
 * when required, else leaves *out NULL. */
static lms_status bind_tensor(binder *b, const char *name, const slot_shape *shape, bool required,
                              const float **out, lms_error *err)
{
    *out = NULL;
    lms_stored_tensor t;
    bool found;
    lms_status st = find_tensor(b, name, shape, required, &t, &found, err);
    if (st != LMS_OK || !found) return st;
    return tensor_as_f32(b, name, &t, shape, out, err);
}

/* Binds the [rows × cols] matrix called name to *out as stored. A missing
 * matrix that is not required leaves out->n == 0. */
static lms_status bind_matrix(binder *b, const char *name, const slot_shape *shape, bool required,
                              lms_matrix *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    lms_stored_tensor t;
    bool found;
    lms_status st = find_tensor(b, name, shape, required, &t, &found, err);
    if (st != LMS_OK || !found) return st;
    *out = (lms_matrix){t.dtype, t.data, (int32_t)shape->dims[0], (int32_t)shape->dims[1]};
    return LMS_OK;
}

/* When the config gives no vocabulary size, the embedding's rows do. */
static lms_status vocab_from_embedding(binder *b, lms_error *err)
{
    lms_model_config *c = &b->model->cfg;
    size_t index;
    const char *name = b->src->global_names[LMS_GLOBAL_TOK_EMBD];
    if (c->vocab_size != 0 || !b->src->find(b->src->ctx, name, &index)) return LMS_OK;
    lms_stored_tensor t;
    b->src->describe(b->src->ctx, index, &t);
    if (t.n_dims != 2)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tensor '%s' has %" PRIu32 " dimensions, expected 2", name, t.n_dims);
    return lms_model_set_dim(&c->vocab_size, "vocabulary size (embedding rows)", (int64_t)t.dims[0],
                             err);
}

static lms_status bind_globals(binder *b, lms_error *err)
{
    lms_model *m = b->model;
    const char *const *names = b->src->global_names;
    slot_shape shape = global_shape(&m->cfg, LMS_GLOBAL_TOK_EMBD);
    lms_status st = bind_matrix(b, names[LMS_GLOBAL_TOK_EMBD], &shape, true, &m->tok_embd, err);
    if (st != LMS_OK) return st;
    shape = global_shape(&m->cfg, LMS_GLOBAL_OUTPUT_NORM);
    st = bind_tensor(b, names[LMS_GLOBAL_OUTPUT_NORM], &shape, true, &m->output_norm, err);
    if (st != LMS_OK) return st;
    size_t index;
    if (m->cfg.tied_embeddings) {
        /* A stored copy of a tied head is the embedding again: consumed,
         * never read. */
        if (b->src->find(b->src->ctx, names[LMS_GLOBAL_OUTPUT], &index)) b->used[index] = 1;
    } else {
        shape = global_shape(&m->cfg, LMS_GLOBAL_OUTPUT);
        st = bind_matrix(b, names[LMS_GLOBAL_OUTPUT], &shape, false, &m->output, err);
        if (st != LMS_OK) return st;
        m->cfg.tied_embeddings = m->output.n == 0;
    }
    /* Tied: the head is the embedding matrix itself (the struct holds
     * pointers to the same data). */
    if (m->cfg.tied_embeddings) m->output = m->tok_embd;
    if (!names[LMS_GLOBAL_ROPE_FREQS]) return LMS_OK;
    shape = global_shape(&m->cfg, LMS_GLOBAL_ROPE_FREQS);
    const float *factors;
    st = bind_tensor(b, names[LMS_GLOBAL_ROPE_FREQS], &shape, false, &factors, err);
    if (st == LMS_OK && factors) m->cfg.rope_freq_factors = factors;
    return st;
}

/* The matrix a slot fills, or NULL for a vector slot. */
static lms_matrix *layer_slot_matrix(lms_layer_weights *w, lms_layer_slot slot)
{
    switch (slot) {
    case LMS_LAYER_Q:
        return &w->wq;
    case LMS_LAYER_K:
        return &w->wk;
    case LMS_LAYER_V:
        return &w->wv;
    case LMS_LAYER_O:
        return &w->wo;
    case LMS_LAYER_GATE:
        return &w->w_gate;
    case LMS_LAYER_UP:
        return &w->w_up;
    case LMS_LAYER_DOWN:
        return &w->w_down;
    default:
        return NULL;
    }
}

/* The vector a slot fills, or NULL for a matrix slot. */
static const float **layer_slot_vector(lms_layer_weights *w, lms_layer_slot slot)
{
    switch (slot) {
    case LMS_LAYER_ATTN_NORM:
        return &w->attn_norm;
    case LMS_LAYER_Q_BIAS:
        return &w->bq;
    case LMS_LAYER_K_BIAS:
        return &w->bk;
    case LMS_LAYER_V_BIAS:
        return &w->bv;
    case LMS_LAYER_Q_NORM:
        return &w->q_norm;
    case LMS_LAYER_K_NORM:
        return &w->k_norm;
    case LMS_LAYER_FFN_NORM:
        return &w->ffn_norm;
    default:
        return NULL;
    }
}

static lms_status bind_layers(binder *b, lms_error *err)
{
    lms_model *m = b->model;
    const lms_model_config *c = &m->cfg;
    /* Each layer needs its required tensors, so the file's tensor count
     * bounds the layer count before anything is allocated for it. */
    size_t per_layer = 0;
    for (int s = 0; s < LMS_LAYER_COUNT; s++)
        per_layer += layer_need(c->arch, (lms_layer_slot)s) == SLOT_REQUIRED;
    if ((uint64_t)c->n_layers * per_layer > b->src->n_tensors)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "%d layers of %s need at least %zu tensors, the checkpoint has %zu",
                        c->n_layers, lms_arch_name(c->arch), (size_t)c->n_layers * per_layer,
                        b->src->n_tensors);
    m->layers = calloc((size_t)c->n_layers, sizeof *m->layers);
    if (!m->layers) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%d layers", c->n_layers);
    for (int32_t l = 0; l < c->n_layers; l++) {
        for (int s = 0; s < LMS_LAYER_COUNT; s++) {
            slot_need need = layer_need(c->arch, (lms_layer_slot)s);
            if (need == SLOT_ABSENT) continue;
            char name[160];
            snprintf(name, sizeof name, "%s%d.%s", b->src->layer_prefix, l, b->src->layer_names[s]);
            slot_shape shape = layer_shape(c, (lms_layer_slot)s);
            lms_matrix *matrix = layer_slot_matrix(&m->layers[l], (lms_layer_slot)s);
            lms_status st =
                matrix ? bind_matrix(b, name, &shape, need == SLOT_REQUIRED, matrix, err)
                       : bind_tensor(b, name, &shape, need == SLOT_REQUIRED,
                                     layer_slot_vector(&m->layers[l], (lms_layer_slot)s), err);
            if (st != LMS_OK) return st;
        }
    }
    return LMS_OK;
}

/* A tensor no slot took means the checkpoint holds something this engine
 * would silently ignore (a bias the architecture does not have, a layer
 * past block_count): refuse rather than compute something else. */
static lms_status check_all_used(const binder *b, lms_error *err)
{
    for (size_t i = 0; i < b->src->n_tensors; i++) {
        if (b->used[i]) continue;
        lms_stored_tensor t;
        b->src->describe(b->src->ctx, i, &t);
        return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                        "%s tensor '%.*s' is not part of a %s model with %d layers", b->src->format,
                        (int)(t.name_len > 120 ? 120 : t.name_len), t.name,
                        lms_arch_name(b->model->cfg.arch), b->model->cfg.n_layers);
    }
    return LMS_OK;
}

lms_status lms_model_bind(lms_model *model, const lms_tensor_source *src, const lms_stop *stop,
                          lms_error *err)
{
    lms_status st = check_config(&model->cfg, err);
    if (st != LMS_OK) return st;
    model->file_backed = src->file_backed;
    binder b = {.model = model, .src = src, .used = calloc(src->n_tensors ? src->n_tensors : 1, 1)};
    if (!b.used) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tensor bookkeeping");
    st = vocab_from_embedding(&b, err);
    if (st == LMS_OK) st = bind_globals(&b, err);
    if (st == LMS_OK) st = bind_layers(&b, err);
    if (st == LMS_OK) st = check_all_used(&b, err);
    if (st == LMS_OK) st = lms_convert_to_f32(b.jobs, b.n_jobs, stop, err);
    free(b.jobs);
    free(b.used);
    return st;
}

lms_status lms_model_create(lms_model **out, lms_error *err)
{
    lms_model *model = calloc(1, sizeof *model);
    if (model) model->storage = calloc(1, sizeof *model->storage);
    if (!model || !model->storage) {
        free(model);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "model");
    }
    model->cfg.rope_scale_linear = 1.0f;
    *out = model;
    return LMS_OK;
}

void lms_model_free(lms_model *model)
{
    if (!model) return;
    struct lms_model_storage *s = model->storage;
    if (s) {
        for (size_t i = 0; i < s->n_buffers; i++)
            lms_free(s->buffers[i]);
        free(s->buffers);
        for (size_t i = 0; i < s->n_shards; i++)
            safetensors_close(s->shards[i]);
        free(s->shards);
        free(s);
    }
    free(model->layers);
    gguf_close(model->gguf);
    free(model->hf_dir);
    free(model);
}
