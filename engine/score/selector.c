/*
 * selector.c — per-request algorithm choice (see selector.h).
 */
#include "selector.h"

#include <stdio.h>

/* The fixed cost of one forward pass, in rows of linear-layer work: the
 * per-layer steps whose cost does not grow with the rows (packing K and V,
 * thread start-up, the LM head's row). Measured on the Qwen3-0.6B geometry
 * on today's kernels (2-core AMD EPYC Zen 4, avx512-bf16 tier, 2 threads):
 * single sequences of 16 to 512 rows (lmscore-local --algorithm serial
 * --repeat 4, best of 2), time fitted as pass + rows · row + causal pairs
 * · pair in this file's units: 21 rows at f32, 8 at bf16, 10 at int8. It
 * decides one thing: whether the query once (prefill_extend, one pass
 * more) beats the query repeated per pack (packed_segment) when the items
 * need several packs. */
#define PASS_COST_ROWS 16.0
/* The dense baseline computes every one of a pack's T² scores and gathers
 * the visible ones through the T×T mask, row by row: its FLOPs are weighted
 * so that auto picks it only where every algorithm costs about the same. */
#define DENSE_FLOP_PENALTY 4.0

typedef struct {
    double row;  /* linear layers, per row */
    double pair; /* attention, per visible (query, key) pair */
    double pass; /* fixed cost per forward pass */
} unit_costs;

static unit_costs units(const lms_model_config *c)
{
    double d = c->d_model, qd = (double)c->n_heads * c->head_dim;
    double kvd = (double)c->n_kv_heads * c->head_dim, ff = c->d_ff;
    double per_layer = d * qd + 2 * d * kvd + qd * d + 3 * d * ff;
    unit_costs u;
    u.row = 2.0 * per_layer * c->n_layers;
    u.pair = 4.0 * qd * c->n_layers;
    u.pass = PASS_COST_ROWS * u.row;
    return u;
}

static double causal_pairs(double n)
{
    return n * (n + 1) / 2;
}

void selector_choose(const lms_model_config *c, const selector_input *in, selector_choice *out)
{
    const unit_costs u = units(c);
    const double p = in->prefix_len;
    double serial = 0, seg = 0, dense = 0, pe = 0;
    int packs = 0, dense_ok = 1;

    /* serial: one pass per sequence */
    for (int32_t i = 0; i < in->n_items; i++) {
        double s = p + in->item_len[i];
        serial += u.row * s + u.pair * causal_pairs(s) + u.pass;
    }

    /* packed: greedy packs of whole items under the budget, each repeating
     * the prefix; prefill+extend: the prefix once, items in batches. */
    int32_t i = 0;
    while (i < in->n_items) {
        double rows = in->prefix_len, pairs = causal_pairs(p);
        double ext_rows = 0, ext_pairs = 0;
        int32_t n = 0;
        while (i < in->n_items) {
            const int32_t len = in->item_len[i];
            if (n > 0 && rows + len > in->max_packed_tokens) break;
            rows += len;
            pairs += len * p + causal_pairs(len);
            ext_rows += len;
            ext_pairs += len * p + causal_pairs(len);
            n++;
            i++;
        }
        packs++;
        seg += u.row * rows + u.pair * pairs + u.pass;
        pe += u.row * ext_rows + u.pair * ext_pairs + u.pass;
        if (rows > in->dense_mask_max_tokens) dense_ok = 0;
        dense += u.row * rows + u.pair * rows * rows * DENSE_FLOP_PENALTY + u.pass;
    }
    if (!in->prefix_cached && in->prefix_len > 0)
        pe += u.row * p + u.pair * causal_pairs(p) + u.pass;

    out->cost[LMS_ALGO_AUTO] = -1;
    out->cost[LMS_ALGO_SERIAL] = serial;
    out->cost[LMS_ALGO_PACKED_SEGMENT] = seg;
    out->cost[LMS_ALGO_PACKED_DENSE] = dense_ok ? dense : -1;
    out->cost[LMS_ALGO_PREFILL_EXTEND] = pe;
    out->best = LMS_ALGO_SERIAL;
    static const lms_algorithm order[] = {LMS_ALGO_PREFILL_EXTEND, LMS_ALGO_PACKED_SEGMENT,
                                          LMS_ALGO_PACKED_DENSE, LMS_ALGO_SERIAL};
    double best = -1;
    for (int k = 0; k < 4; k++) {
        double v = out->cost[order[k]];
        if (v >= 0 && (best < 0 || v < best * 0.999)) {
            best = v;
            out->best = order[k];
        }
    }
    snprintf(out->reason, sizeof out->reason,
             "auto: est. GFLOP-eq prefill_extend %.3g%s, packed_segment %.3g (%d pack%s), "
             "serial %.3g; Q=%d N=%d",
             pe * 1e-9, in->prefix_cached ? " (prefix cached)" : "", seg * 1e-9, packs,
             packs == 1 ? "" : "s", serial * 1e-9, in->prefix_len, in->n_items);
}
