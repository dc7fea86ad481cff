/*
 * attention.h — multi-head (GQA) attention over a batch of rows whose
 * visibility is described by segments, never by a T×T matrix (except in the
 * dense-mask mode, which exists as the baseline).
 *
 * A batch is: rows [0, prefix_rows) — a causal prefix — then segments
 * [seg_begin[s], seg_end[s]). Row r of the prefix sees cached rows (a KV
 * prefix from an earlier pass) and batch rows [0, r]. Row r of segment s sees
 * the cached rows, batch rows [0, prefix_rows) and [seg_begin[s], r]. Rows in
 * no segment (alignment padding) see nothing and produce zeros.
 *
 * One segment and no prefix is a plain causal sequence; no prefix and many
 * segments is a batch of independent sequences; a prefix and many segments is
 * a packed multi-item request; cached rows and segments are an extend.
 *
 * A row's output is one fixed function of its query and of the keys and
 * values it sees, in their order (cached, prefix, own): every score the same
 * chain of fused multiply-adds over head_dim, the softmax over the row's
 * visible scores laid out in that order, the output the chain of fused
 * multiply-adds over those keys. However a batch is cut — serial sequences,
 * packs, an extend over cached rows, the dense mask — a row with the same
 * inputs gets the same bits.
 *
 * Keys and values are f32, or f16 (16-bit attention, in the 16-bit and int8
 * precisions): each rounded once (kernels.h's f16_pack_fn) whether it comes
 * from the batch or from the cached rows (which then hold those bits), then
 * widened back to f32 (exactly) for the f32 kernel: the products of the f16
 * values, with f32 queries, scores, softmax and accumulation.
 */
#ifndef LMS_ATTENTION_H
#define LMS_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "lmscore.h"
#include "vec.h"

typedef struct {
    int32_t n_rows;
    int32_t prefix_rows;
    int32_t n_segments;
    const int32_t *seg_begin; /* ascending, seg_begin[0] >= prefix_rows */
    const int32_t *seg_end;   /* seg_end[s] <= seg_begin[s+1] */
    bool dense_mask;          /* materialise the T×T mask and attend through it */
} attn_layout;

/* Rows of an attention block. A block of the causal prefix scores its rows
 * against every key up to its last row, so it computes about block/2
 * masked scores per row: small blocks waste less. */
#define ATTN_BLOCK_ROWS 128

typedef struct {
    int32_t n_heads, n_kv_heads, head_dim;
    int32_t block_rows;      /* rows per block of work */
    const vec_kernels *vec;  /* the softmax's (vec.h) */
    const f32_kernels *f32;  /* the products' kernel with f32 keys and values (kernels.h) */
    const w16_kernels *kv16; /* with f16 keys and values; NULL: f32 attention */
} attn_geometry;

typedef struct attn_plan attn_plan;

/* Splits the batch into row blocks and allocates the threads' scratch (once
 * per forward pass; reused by every layer). Fails with LMS_ERR_INTERNAL on an
 * inconsistent layout, LMS_ERR_NOMEM when out of memory. */
lms_status attn_plan_create(const attn_layout *layout, const attn_geometry *geo,
                            int32_t cached_rows, attn_plan **out, lms_error *err);
void attn_plan_free(attn_plan *plan);

/* out[r] = attention of q[r] over the visible keys. q and out are
 * [n_rows × n_heads*head_dim]; k, v are [n_rows × n_kv_heads*head_dim];
 * ck, cv are the cached rows (cached_rows × kv_dim; f32, or f16 bits with
 * kv16; may be NULL when 0). Uses the plan's scratch: one attn_run per plan
 * at a time. */
void attn_run(const attn_plan *plan, const float *q, const float *k, const float *v, const void *ck,
              const void *cv, float *out);

#endif
