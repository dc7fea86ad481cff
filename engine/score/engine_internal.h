/*
 * engine_internal.h — what the engine's modules share about an open engine.
 * Not part of the public API (lmscore.h).
 */
#ifndef LMS_ENGINE_INTERNAL_H
#define LMS_ENGINE_INTERNAL_H

#include "forward.h"
#include "lmscore.h"
#include "prefix_cache.h"

struct lms_engine {
    lms_model *model;
    model_weights *weights;   /* the model's matrices as the tier multiplies them */
    lms_tokenizer *tokenizer; /* NULL when the checkpoint has none */
    lms_engine_options opt;
    forward_tuning tune;
    char isa_dropped[200]; /* a tier auto passed over and why (compute_tier_select), or "" */
    prefix_cache *cache;
};

#endif
