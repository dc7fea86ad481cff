/*
 * attention_plan.h — how a batch is cut for attention: the row blocks, the
 * pieces of segments in each, and the threads' scratch. Shared by the planner
 * (attention_plan.c) and the kernels (attention.c), and open to the engine's
 * unit tests; the rest of the engine sees attn_plan as opaque (attention.h).
 *
 * Blocks are in row order and cover the rows from 0 to n_rows without gaps or
 * overlap, each row in exactly one block, when the rows before the first
 * segment are the prefix and its padding (with no prefix, the first segment
 * starts at row 0: earlier rows would be in no block). A piece is the rows
 * [a, b) of one segment (or of the causal prefix) that share a block; its own
 * keys are the batch rows [own0, row], own0 being the start of the piece's
 * segment (0 for the prefix). Rows of a block in no piece are padding: they
 * see nothing and their output is zero.
 */
#ifndef LMS_ATTENTION_PLAN_H
#define LMS_ATTENTION_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "attention.h"

typedef struct {
    int32_t a, b; /* query rows [a, b) */
    int32_t own0; /* own keys are batch rows [own0, row] */
} attn_piece;

typedef struct {
    int32_t r0, r1;      /* rows computed (includes padding rows) */
    int32_t shared;      /* batch rows [0, shared) are visible to every piece */
    int32_t first_piece; /* pieces [first_piece, end_piece) */
    int32_t end_piece;
} attn_block;

struct attn_plan {
    attn_geometry geo;
    int32_t n_rows;
    int32_t cached;
    int32_t n_blocks, n_pieces;
    attn_block *blocks;
    attn_piece *pieces;
    int32_t max_rows;     /* rows of the largest block */
    int32_t max_own_keys; /* widest own-key span */
    int32_t max_shared;   /* most shared keys (cached included) */
    uint8_t *mask;        /* dense mode: [n_rows × n_rows], 1 = visible */
    int32_t key_panels;   /* panels of 32 keys over the cached and batch rows */
    float *keys_t;        /* [n_kv_heads × key_panels × head_dim × 32]: Kᵀ by panel */
    int32_t value_panels; /* panels of 32 of head_dim */
    float *values;        /* [n_kv_heads × value_panels × key_panels·32 × 32]: V by panel */
    /* with geo.kv16, the f16 keys and values widened back to f32 */
    int n_threads;
    size_t scratch_floats; /* per thread */
    float *scratch;        /* [n_threads × scratch_floats], reused by every layer */
};

#endif
