/*
 * forward.h — one pass of a batch of rows through the transformer, ending in
 * the log-probabilities of the label tokens at the rows that are scored.
 *
 * Rows carry their own token and RoPE position; which rows each row may see
 * is an attn_layout (attention.h). Only score rows go through the final norm
 * and the LM head with a full-vocabulary log-softmax per row (lm_head.h).
 */
#ifndef LMS_FORWARD_H
#define LMS_FORWARD_H

#include <stdint.h>

#include "attention.h"
#include "kv_prefix.h"
#include "matmul.h"
#include "model.h"
#include "model_weights.h"
#include "lmscore.h"

/* Where a pass spends its time, for the benchmarks (bench_phases): seconds
 * added per phase, when a batch asks for it. */
typedef enum {
    FORWARD_EMBED,     /* the embedding rows */
    FORWARD_NORM,      /* RMSNorms, biases */
    FORWARD_QKV,       /* the q, k, v projections (x quantised once) */
    FORWARD_ROPE,      /* q, k per-head norms and RoPE, the K/V capture */
    FORWARD_ATTENTION, /* attention (K/V packed, scores, softmax, P·V) */
    FORWARD_O,         /* the output projection */
    FORWARD_GATE_UP,   /* the gate and up projections */
    FORWARD_SWIGLU,    /* silu(gate) · up */
    FORWARD_DOWN,      /* the down projection */
    FORWARD_LM_HEAD,   /* final norm, LM head, log-softmax */
    FORWARD_PHASES
} forward_phase;

extern const char *const forward_phase_names[FORWARD_PHASES];

typedef struct {
    double seconds[FORWARD_PHASES];
} forward_profile;

typedef struct {
    attn_layout layout;       /* n_rows, prefix, segments, dense_mask */
    const int32_t *tokens;    /* [n_rows] */
    const int32_t *positions; /* [n_rows] */
    const kv_prefix *cached;  /* rows before the batch, visible to all; or NULL */
    kv_prefix *capture;       /* receives the K/V of rows [0, prefix_rows); or NULL */

    int32_t n_score_rows;
    const int32_t *score_rows; /* batch row indices */
    int32_t n_labels;
    const int32_t *labels;
    float *label_logprobs; /* out: [n_score_rows × n_labels] */

    int (*should_stop)(void *ctx); /* polled between layers; may be NULL */
    void *stop_ctx;
    forward_profile *profile; /* receives the phases' seconds; may be NULL */
} forward_batch;

typedef struct {
    int32_t block_rows;   /* rows of an attention block (ATTN_BLOCK_ROWS) */
    matmul_config matmul; /* the projections' kernels */
    bool kv16;            /* 16-bit attention (attention.h); captured K/V then f16 */
} forward_tuning;

/* One pass of model m, its matrices w, over batch b. */
lms_status forward_run(const lms_model *m, const model_weights *w, const forward_tuning *tune,
                       const forward_batch *b, lms_error *err);

#endif
