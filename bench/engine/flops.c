/*
 * flops.c — the useful-FLOP model of the benchmarks (see flops.h).
 */
#include "flops.h"

flop_units flop_units_of(const lms_model_info *c)
{
    const double d = c->d_model, qd = (double)c->n_heads * c->head_dim;
    const double kvd = (double)c->n_kv_heads * c->head_dim, ff = c->d_ff;
    flop_units u;
    u.per_row = 2.0 * (d * qd + 2.0 * d * kvd + qd * d + 3.0 * d * ff) * c->n_layers;
    u.per_pair = 4.0 * qd * c->n_layers;
    u.per_head = 2.0 * (double)c->vocab_size * d;
    return u;
}

static double causal_pairs(int64_t t)
{
    return (double)t * (double)(t + 1) / 2.0;
}

double flops_sequence(const flop_units *u, int64_t t, int64_t scored)
{
    return u->per_row * (double)t + u->per_pair * causal_pairs(t) + u->per_head * (double)scored;
}

double flops_items_after_query(const flop_units *u, int64_t q, int64_t n, int64_t l)
{
    const double item_pairs = (double)l * (double)q + causal_pairs(l);
    return (double)n * (u->per_row * (double)l + u->per_pair * item_pairs + u->per_head);
}

double flops_multi_item(const flop_units *u, int64_t q, int64_t n, int64_t l)
{
    return flops_sequence(u, q, 0) + flops_items_after_query(u, q, n, l);
}

double flops_serial(const flop_units *u, int64_t q, int64_t n, int64_t l)
{
    return (double)n * flops_sequence(u, q + l, 1);
}
