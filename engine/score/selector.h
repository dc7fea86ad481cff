/*
 * selector.h — the cost model that picks a multi-item algorithm per request.
 *
 * Cost = arithmetic (linear layers per row, attention per visible
 * query/key pair) + a fixed cost per forward pass (the weights read again
 * by every pass: PASS_COST_ROWS rows of linear work, selector.c). The
 * shapes come from the request (query length, padded item lengths) and the
 * model's geometry; pack sizes from the engine's token budget.
 */
#ifndef LMS_SELECTOR_H
#define LMS_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"
#include "model.h"

typedef struct {
    int32_t prefix_len; /* shared prefix rows (query, + delimiter) */
    int32_t n_items;
    const int32_t *item_len; /* [n_items] */
    int32_t max_packed_tokens;
    int32_t dense_mask_max_tokens;
    bool prefix_cached; /* the prefix KV is in the prefix cache */
} selector_input;

typedef struct {
    double cost[LMS_ALGO_COUNT]; /* indexed by lms_algorithm; <0 when not possible */
    lms_algorithm best;
    char reason[200];
} selector_choice;

void selector_choose(const lms_model_config *cfg, const selector_input *in, selector_choice *out);

#endif
