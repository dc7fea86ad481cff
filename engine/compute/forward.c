/*
 * forward.c — the transformer forward pass (llama, qwen2, qwen3).
 *
 *   x = embed(tokens)
 *   per layer:  h = rmsnorm(x); q,k,v = h·Wᵀ (+bias) ; q,k per-head norm
 *               (qwen3) ; RoPE ; x += attention(q,k,v)·Woᵀ
 *               h = rmsnorm(x); x += (silu(h·Wgᵀ) ⊙ h·Wuᵀ)·Wdᵀ
 *   score rows: rmsnorm → LM head → log-softmax → label columns (lm_head.c)
 *
 * Every projection is one tiled product over all rows of the batch
 * (matmul.h). The per-row loops and the products' tiles run under OpenMP:
 * one thread pool, no BLAS.
 */
#include "forward.h"

#include <math.h>
#include <omp.h>
#include <string.h>
#include <time.h>

#include "alloc.h"
#include "lm_head.h"
#include "matmul.h"
#include "vec.h"

/* Below this many elements a loop runs on one thread: an OpenMP region costs
 * microseconds of wake-up and barrier, more than the work itself. */
#define PARALLEL_MIN_ELEMENTS    65536
#define PARALLEL_IF(rows, width) if ((int64_t)(rows) * (width) >= PARALLEL_MIN_ELEMENTS)

const char *const forward_phase_names[FORWARD_PHASES] = {
    [FORWARD_EMBED] = "embedding",     [FORWARD_NORM] = "norms",          [FORWARD_QKV] = "q, k, v",
    [FORWARD_ROPE] = "q/k norm, RoPE", [FORWARD_ATTENTION] = "attention", [FORWARD_O] = "o",
    [FORWARD_GATE_UP] = "gate, up",    [FORWARD_SWIGLU] = "SwiGLU",       [FORWARD_DOWN] = "down",
    [FORWARD_LM_HEAD] = "LM head",
};

/* Adds the time since *since to phase p of the profile (if any) and
 * restarts *since. */
static void phase_done(forward_profile *profile, forward_phase p, struct timespec *since)
{
    if (!profile) return;
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    profile->seconds[p] +=
        (double)(now.tv_sec - since->tv_sec) + 1e-9 * (double)(now.tv_nsec - since->tv_nsec);
    *since = now;
}

static void add_bias(const vec_kernels *vec, float *y, int32_t rows, const float *bias, int32_t n)
{
    if (!bias) return;
#pragma omp parallel for PARALLEL_IF(rows, n)
    for (int32_t r = 0; r < rows; r++)
        vec->add(y + (size_t)r * n, bias, n);
}

static void rmsnorm_rows(const vec_kernels *vec, float *y, const float *x, int32_t rows,
                         const float *w, int32_t n, float eps)
{
#pragma omp parallel for PARALLEL_IF(rows, n)
    for (int32_t r = 0; r < rows; r++)
        vec->rmsnorm(y + (size_t)r * n, x + (size_t)r * n, w, n, eps);
}

/* Per-head RMSNorm (qwen3) then RoPE on [rows × heads*hd]. */
static void norm_and_rope(const vec_kernels *vec, const lms_model_config *c, float *x, int32_t rows,
                          int32_t heads, const float *head_norm, const int32_t *pos,
                          const float *inv_freq)
{
    const int32_t hd = c->head_dim, half = hd / 2;
#pragma omp parallel for PARALLEL_IF(rows, heads *hd * 4)
    for (int32_t r = 0; r < rows; r++) {
        float angle_cos[LMS_MAX_HEAD_DIM / 2], angle_sin[LMS_MAX_HEAD_DIM / 2];
        float p = (float)pos[r] / c->rope_scale_linear;
        for (int32_t i = 0; i < half; i++) {
            double a = (double)p * inv_freq[i];
            angle_cos[i] = (float)cos(a);
            angle_sin[i] = (float)sin(a);
        }
        for (int32_t h = 0; h < heads; h++) {
            float *v = x + (size_t)r * heads * hd + (size_t)h * hd;
            if (head_norm) vec->rmsnorm(v, v, head_norm, hd, c->rms_eps);
            for (int32_t i = 0; i < half; i++) {
                int32_t i0 = c->rope_pairing == LMS_ROPE_NEOX ? i : 2 * i;
                int32_t i1 = c->rope_pairing == LMS_ROPE_NEOX ? i + half : 2 * i + 1;
                float a = v[i0], b = v[i1];
                v[i0] = a * angle_cos[i] - b * angle_sin[i];
                v[i1] = a * angle_sin[i] + b * angle_cos[i];
            }
        }
    }
}

lms_status forward_run(const lms_model *m, const model_weights *mw, const forward_tuning *tune,
                       const forward_batch *b, lms_error *err)
{
    const lms_model_config *c = &m->cfg;
    const int32_t t = b->layout.n_rows, d = c->d_model, hd = c->head_dim;
    const int32_t qd = c->n_heads * hd, kvd = c->n_kv_heads * hd, ff = c->d_ff;
    const int32_t cached = b->cached ? b->cached->len : 0;
    if ((b->cached && b->cached->half != tune->kv16) ||
        (b->capture && b->capture->half != tune->kv16))
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL,
                        "a KV prefix of another attention precision");

    const compute_tier *tier = tune->matmul.tier;
    const vec_kernels *vec = tier->kernels->vec;
    const attn_geometry geo = {c->n_heads,
                               c->n_kv_heads,
                               hd,
                               tune->block_rows,
                               vec,
                               tier->kernels->f32,
                               tune->kv16 ? tier->kernels->w16 : NULL};
    attn_plan *plan = NULL;
    lms_status st = attn_plan_create(&b->layout, &geo, cached, &plan, err);
    if (st != LMS_OK) return st;

    float *x = lms_alloc((size_t)t * d * sizeof(float));
    float *h = lms_alloc((size_t)t * d * sizeof(float));
    float *q = lms_alloc((size_t)t * qd * sizeof(float));
    float *att = lms_alloc((size_t)t * qd * sizeof(float));
    float *k = lms_alloc((size_t)t * kvd * sizeof(float));
    float *v = lms_alloc((size_t)t * kvd * sizeof(float));
    float *gate = lms_alloc((size_t)t * ff * sizeof(float));
    float *up = lms_alloc((size_t)t * ff * sizeof(float));
    const int32_t widest = ff > qd ? (ff > d ? ff : d) : (qd > d ? qd : d);
    matmul_scratch *scratch = matmul_scratch_create(t, widest);
    float inv_freq[LMS_MAX_HEAD_DIM / 2];
    if (!x || !h || !q || !att || !k || !v || !gate || !up || !scratch) {
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for a %d-row forward pass", t);
        goto out;
    }
    forward_profile *prof = b->profile;
    struct timespec since;
    if (prof) clock_gettime(CLOCK_MONOTONIC, &since);
    for (int32_t i = 0; i < hd / 2; i++) {
        double f = pow((double)c->rope_theta, -2.0 * i / hd);
        if (c->rope_freq_factors) f /= c->rope_freq_factors[i];
        inv_freq[i] = (float)f;
    }
#pragma omp parallel for PARALLEL_IF(t, d)
    for (int32_t r = 0; r < t; r++)
        lms_weights_row(&mw->tok_embd, b->tokens[r], x + (size_t)r * d);
    phase_done(prof, FORWARD_EMBED, &since);

    const matmul_config *mm = &tune->matmul;
    for (int32_t l = 0; l < c->n_layers; l++) {
        if (b->should_stop && b->should_stop(b->stop_ctx)) {
            st = lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "cancelled");
            goto out;
        }
        const lms_layer_weights *lv = &m->layers[l]; /* norms and biases */
        const layer_weights *w = &mw->layers[l];
        rmsnorm_rows(vec, h, x, t, lv->attn_norm, d, c->rms_eps);
        phase_done(prof, FORWARD_NORM, &since);
        const matmul_product qkv[] = {
            {&w->wq, q, KERNEL_STORE}, {&w->wk, k, KERNEL_STORE}, {&w->wv, v, KERNEL_STORE}};
        matmul_many(mm, qkv, 3, h, t, scratch);
        phase_done(prof, FORWARD_QKV, &since);
        add_bias(vec, q, t, lv->bq, qd);
        add_bias(vec, k, t, lv->bk, kvd);
        add_bias(vec, v, t, lv->bv, kvd);
        phase_done(prof, FORWARD_NORM, &since);
        norm_and_rope(vec, c, q, t, c->n_heads, lv->q_norm, b->positions, inv_freq);
        norm_and_rope(vec, c, k, t, c->n_kv_heads, lv->k_norm, b->positions, inv_freq);
        if (b->capture) {
            const size_t n = (size_t)b->layout.prefix_rows * kvd;
            if (b->capture->half) {
                tier->kernels->w16->to_f16(k, kv_prefix_k(b->capture, l), n);
                tier->kernels->w16->to_f16(v, kv_prefix_v(b->capture, l), n);
            } else {
                memcpy(kv_prefix_k(b->capture, l), k, n * sizeof(float));
                memcpy(kv_prefix_v(b->capture, l), v, n * sizeof(float));
            }
        }
        phase_done(prof, FORWARD_ROPE, &since);
        attn_run(plan, q, k, v, cached ? kv_prefix_k(b->cached, l) : NULL,
                 cached ? kv_prefix_v(b->cached, l) : NULL, att);
        phase_done(prof, FORWARD_ATTENTION, &since);
        matmul(mm, &w->wo, att, t, KERNEL_ACCUMULATE, x, scratch);
        phase_done(prof, FORWARD_O, &since);

        rmsnorm_rows(vec, h, x, t, lv->ffn_norm, d, c->rms_eps);
        phase_done(prof, FORWARD_NORM, &since);
        const matmul_product gate_up[] = {{&w->w_gate, gate, KERNEL_STORE},
                                          {&w->w_up, up, KERNEL_STORE}};
        matmul_many(mm, gate_up, 2, h, t, scratch);
        phase_done(prof, FORWARD_GATE_UP, &since);
#pragma omp parallel for PARALLEL_IF(t, ff * 4)
        for (int32_t r = 0; r < t; r++)
            vec->swiglu(gate + (size_t)r * ff, up + (size_t)r * ff, (size_t)ff);
        phase_done(prof, FORWARD_SWIGLU, &since);
        matmul(mm, &w->w_down, gate, t, KERNEL_ACCUMULATE, x, scratch);
        phase_done(prof, FORWARD_DOWN, &since);
    }
    if (b->capture) {
        b->capture->len = b->layout.prefix_rows;
        memcpy(b->capture->last_hidden, x + (size_t)(b->layout.prefix_rows - 1) * d,
               (size_t)d * sizeof(float));
    }
    st = lm_head_label_logprobs(m, &mw->output, mm, x, b->score_rows, b->n_score_rows, b->labels,
                                b->n_labels, b->label_logprobs, err);
    phase_done(prof, FORWARD_LM_HEAD, &since);
out:
    attn_plan_free(plan);
    matmul_scratch_free(scratch);
    lms_free(x);
    lms_free(h);
    lms_free(q);
    lms_free(att);
    lms_free(k);
    lms_free(v);
    lms_free(gate);
    lms_free(up);
    return st;
}
