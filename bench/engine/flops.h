/*
 * flops.h — the useful FLOPs of a scoring request: what an ideal
 * implementation of that request must compute, whatever the engine did.
 *
 *   linear  2 · (d·qd + 2·d·kvd + qd·d + 3·d·ff) · n_layers  per real row
 *   attn    4 · qd · n_layers                                  per visible (query, key) pair
 *           (Q·Kᵀ and P·V, 2·head_dim each, per head)
 *   head    2 · vocab · d                                      per scored row
 *
 * Norms, RoPE, SwiGLU and the softmaxes are left out (they are O(rows·d)).
 * A multi-item request computes the query once and every item against it;
 * serial computes the query again for every item.
 */
#ifndef BENCH_FLOPS_H
#define BENCH_FLOPS_H

#include <stdint.h>

#include "lmscore.h"

typedef struct {
    double per_row;  /* linear layers */
    double per_pair; /* attention */
    double per_head; /* final LM head, per scored row */
} flop_units;

flop_units flop_units_of(const lms_model_info *model);

/* One causal sequence of t rows, scored at `scored` of them. */
double flops_sequence(const flop_units *u, int64_t t, int64_t scored);

/* n items of l tokens after a query of q tokens, every item scored once:
 * multi_item = query + items; items alone when the query's KV is cached;
 * serial = n sequences of q + l tokens. */
double flops_multi_item(const flop_units *u, int64_t q, int64_t n, int64_t l);
double flops_items_after_query(const flop_units *u, int64_t q, int64_t n, int64_t l);
double flops_serial(const flop_units *u, int64_t q, int64_t n, int64_t l);

#endif
