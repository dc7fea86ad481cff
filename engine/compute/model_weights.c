/*
 * model_weights.c — a model's matrices in the formats a tier multiplies
 * (see model_weights.h).
 */
#include "model_weights.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "weights_pack.h"

/* The format lms_precision gives a matrix stored as type (before the
 * tier's say). */
static lms_weights_format asked_format(lms_precision precision, lms_dtype type)
{
    switch (precision) {
    case LMS_PRECISION_F32:
        return LMS_WEIGHTS_F32;
    case LMS_PRECISION_BF16:
    case LMS_PRECISION_BF16X2:
        return type == LMS_DTYPE_F16 ? LMS_WEIGHTS_F16 : LMS_WEIGHTS_BF16;
    case LMS_PRECISION_INT8:
    case LMS_PRECISION_INT8X2:
        return LMS_WEIGHTS_Q8;
    case LMS_PRECISION_AUTO:
        break;
    }
    switch (type) {
    case LMS_DTYPE_F32:
        return LMS_WEIGHTS_F32;
    case LMS_DTYPE_F16:
        return LMS_WEIGHTS_F16;
    case LMS_DTYPE_BF16:
        return LMS_WEIGHTS_BF16;
    default: /* ggml's block formats */
        return LMS_WEIGHTS_Q8;
    }
}

/* What the matrices are being turned into, until they all run at once. */
typedef struct {
    model_weights *w;
    const lms_model *model;
    const compute_tier *tier;
    lms_precision precision;
    lms_pack_job *packs; /* one per matrix at most */
    size_t n_packs;
    bool stored[LMS_DTYPE_Q6_K + 1]; /* the matrices' stored types */
} builder;

/* Sets *out to matrix m in the format the precision and the tier give it,
 * queueing its packing. */
static lms_status bind(builder *b, const lms_matrix *m, lms_weights *out, lms_error *err)
{
    b->stored[m->type] = true;
    lms_weights_format format = asked_format(b->precision, m->type);
    if (!compute_tier_multiplies(b->tier, format)) format = LMS_WEIGHTS_F32;
    void *buffer;
    lms_status st = lms_weights_alloc(out, m->type, format, m->n, m->k, &buffer, err);
    if (st != LMS_OK) return st;
    out->x_codes =
        b->precision == LMS_PRECISION_INT8X2 || b->precision == LMS_PRECISION_BF16X2 ? 2 : 1;
    compute_tier_own_layout(b->tier, out);
    b->packs[b->n_packs++] = (lms_pack_job){m->type, m->data, out, b->model->file_backed};
    b->w->buffers[b->w->n_buffers++] = buffer;
    return LMS_OK;
}

/* Sets w->precision and its reason from the formats the matrices took. */
static void describe_precision(model_weights *w, const builder *b)
{
    const lms_weights **all = malloc(MODEL_WEIGHTS_MAX(w->n_layers) * sizeof *all);
    int counts[LMS_WEIGHTS_Q8 + 1] = {0};
    if (all) {
        const int32_t n = model_weights_list(w, all);
        for (int32_t i = 0; i < n; i++)
            counts[all[i]->format]++;
        free(all);
    }
    const int sixteen = counts[LMS_WEIGHTS_F16] + counts[LMS_WEIGHTS_BF16];
    const int kinds = (counts[LMS_WEIGHTS_F32] > 0) + (sixteen > 0) + (counts[LMS_WEIGHTS_Q8] > 0);
    const char *int8 = lms_precision_name(
        b->precision == LMS_PRECISION_INT8X2 ? LMS_PRECISION_INT8X2 : LMS_PRECISION_INT8);
    const char *bf16 = lms_precision_name(
        b->precision == LMS_PRECISION_BF16X2 ? LMS_PRECISION_BF16X2 : LMS_PRECISION_BF16);
    w->precision = kinds > 1 ? "mixed" : counts[LMS_WEIGHTS_Q8] ? int8 : sixteen ? bf16 : "f32";
    char types[64] = "";
    for (int t = 0; t <= LMS_DTYPE_Q6_K; t++)
        if (b->stored[t])
            snprintf(types + strlen(types), sizeof types - strlen(types), "%s%s",
                     types[0] ? ", " : "", lms_dtype_name((lms_dtype)t));
    const bool low = compute_tier_multiplies(b->tier, LMS_WEIGHTS_BF16) &&
                     compute_tier_multiplies(b->tier, LMS_WEIGHTS_Q8);
    char lacks[96];
    snprintf(lacks, sizeof lacks, "the %s tier has no 16-bit or int8 kernels", b->tier->name);
    if (b->precision == LMS_PRECISION_AUTO && !low && w->precision[0] == 'f')
        snprintf(w->precision_reason, sizeof w->precision_reason,
                 "auto: the weights are stored as %s; %s", types, lacks);
    else if (b->precision == LMS_PRECISION_AUTO)
        snprintf(w->precision_reason, sizeof w->precision_reason,
                 "auto: every weight kept as stored (%s)", types);
    else if (!low && b->precision != LMS_PRECISION_F32)
        snprintf(w->precision_reason, sizeof w->precision_reason, "%s asked for, but %s: f32",
                 lms_precision_name(b->precision), lacks);
    else
        snprintf(w->precision_reason, sizeof w->precision_reason,
                 "%s asked for (weights stored as %s)", lms_precision_name(b->precision), types);
}

lms_status model_weights_create(const lms_model *m, const compute_tier *tier,
                                lms_precision precision, const lms_stop *stop, model_weights **out,
                                lms_error *err)
{
    *out = NULL;
    const int32_t n_layers = m->cfg.n_layers;
    model_weights *w = calloc(1, sizeof *w);
    builder b = {.w = w, .model = m, .tier = tier, .precision = precision};
    const size_t most = MODEL_WEIGHTS_MAX(n_layers);
    if (w) {
        w->n_layers = n_layers;
        w->tied = m->cfg.tied_embeddings;
        w->layers = calloc((size_t)n_layers, sizeof *w->layers);
        w->buffers = calloc(most, sizeof *w->buffers);
    }
    b.packs = calloc(most, sizeof *b.packs);
    lms_status st = LMS_OK;
    if (!w || !w->layers || !w->buffers || !b.packs)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "the weights of %d layers", n_layers);
    if (st == LMS_OK) st = bind(&b, &m->tok_embd, &w->tok_embd, err);
    if (st == LMS_OK && !w->tied) st = bind(&b, &m->output, &w->output, err);
    for (int32_t l = 0; l < n_layers && st == LMS_OK; l++) {
        const lms_layer_weights *src = &m->layers[l];
        layer_weights *dst = &w->layers[l];
        const lms_matrix *from[] = {&src->wq,     &src->wk,   &src->wv,    &src->wo,
                                    &src->w_gate, &src->w_up, &src->w_down};
        lms_weights *to[] = {&dst->wq,     &dst->wk,   &dst->wv,    &dst->wo,
                             &dst->w_gate, &dst->w_up, &dst->w_down};
        for (size_t i = 0; i < sizeof from / sizeof *from && st == LMS_OK; i++)
            st = bind(&b, from[i], to[i], err);
    }
    if (st == LMS_OK) st = lms_pack_run(b.packs, b.n_packs, stop, err);
    free(b.packs);
    if (st != LMS_OK) {
        model_weights_free(w);
        return st;
    }
    if (w->tied) w->output = w->tok_embd; /* the same data */
    /* The LM head in bf16 keeps x as two bf16 values: a pass reads its
     * matrix once for few score rows, bound by memory, so the second
     * product per pair costs no time, and the label log-probs keep 16 of
     * x's bits (an int8 head keeps the precision's codes: llama.cpp's). */
    if (w->output.format == LMS_WEIGHTS_BF16) w->output.x_codes = 2;
    /* So do the q and k projections: attention's logits are their product,
     * through a softmax, and x rounded once there carries bf16's error
     * past llama.cpp's bf16 path; with two values it stays below it
     * (docs/engine.md), for a fifth more projection work. */
    for (int32_t l = 0; l < n_layers; l++) {
        lms_weights *qk[] = {&w->layers[l].wq, &w->layers[l].wk};
        for (size_t i = 0; i < sizeof qk / sizeof *qk; i++)
            if (qk[i]->format == LMS_WEIGHTS_BF16) qk[i]->x_codes = 2;
    }
    describe_precision(w, &b);
    *out = w;
    return LMS_OK;
}

void model_weights_free(model_weights *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->n_buffers; i++)
        lms_free(w->buffers[i]);
    free(w->buffers);
    free(w->layers);
    free(w);
}

int32_t model_weights_list(const model_weights *w, const lms_weights **out)
{
    int32_t n = 0;
    out[n++] = &w->tok_embd;
    if (!w->tied) out[n++] = &w->output;
    for (int32_t l = 0; l < w->n_layers; l++) {
        const layer_weights *lw = &w->layers[l];
        const lms_weights *layer[] = {&lw->wq,     &lw->wk,   &lw->wv,    &lw->wo,
                                      &lw->w_gate, &lw->w_up, &lw->w_down};
        for (size_t i = 0; i < sizeof layer / sizeof *layer; i++)
            out[n++] = layer[i];
    }
    return n;
}
