/*
 * kv_prefix.c — allocation of per-layer prefix K/V (see kv_prefix.h).
 */
#include "kv_prefix.h"

#include <stdlib.h>

#include "alloc.h"

lms_status kv_prefix_create(int32_t n_layers, int32_t kv_dim, int32_t d_model, int32_t capacity,
                            bool half, kv_prefix **out, lms_error *err)
{
    *out = NULL;
    kv_prefix *kv = calloc(1, sizeof *kv);
    size_t n = (size_t)n_layers * (size_t)capacity * (size_t)kv_dim;
    if (kv && n) {
        kv->half = half;
        kv->k = lms_alloc(n * kv_prefix_elem(kv));
        kv->v = lms_alloc(n * kv_prefix_elem(kv));
        kv->last_hidden = lms_alloc((size_t)d_model * sizeof(float));
    }
    if (!kv || !n || !kv->k || !kv->v || !kv->last_hidden) {
        kv_prefix_free(kv);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for a %d-row KV prefix",
                        capacity);
    }
    kv->n_layers = n_layers;
    kv->kv_dim = kv_dim;
    kv->d_model = d_model;
    kv->capacity = capacity;
    *out = kv;
    return LMS_OK;
}

void kv_prefix_free(kv_prefix *kv)
{
    if (!kv) return;
    lms_free(kv->k);
    lms_free(kv->v);
    lms_free(kv->last_hidden);
    free(kv);
}

size_t kv_prefix_bytes(const kv_prefix *kv)
{
    return 2 * (size_t)kv->n_layers * kv->capacity * kv->kv_dim * kv_prefix_elem(kv) +
           (size_t)kv->d_model * sizeof(float);
}
