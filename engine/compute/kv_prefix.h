/*
 * kv_prefix.h — the keys and values of a run of leading rows, for every layer.
 *
 * A forward pass can capture the K/V (after RoPE) of its causal prefix rows
 * into one of these, and a later pass can attend to it as rows that come
 * before all of its own: that is prefill+extend. The prefix cache keeps these
 * keyed by token sequence.
 */
#ifndef LMS_KV_PREFIX_H
#define LMS_KV_PREFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct {
    int32_t n_layers;
    int32_t kv_dim;   /* n_kv_heads * head_dim */
    int32_t capacity; /* rows allocated */
    int32_t len;      /* rows filled */
    bool half;        /* K and V as f16 bits (16-bit attention, attention.h), else f32 */
    void *k;          /* [n_layers][capacity][kv_dim] */
    void *v;
    /* The last row's hidden state after the last layer (before the final
     * norm): what an empty item is scored from without re-running the prefix. */
    int32_t d_model;
    float *last_hidden;
} kv_prefix;

lms_status kv_prefix_create(int32_t n_layers, int32_t kv_dim, int32_t d_model, int32_t capacity,
                            bool half, kv_prefix **out, lms_error *err);
void kv_prefix_free(kv_prefix *kv);
size_t kv_prefix_bytes(const kv_prefix *kv);

/* Bytes of one element of K or V. */
static inline size_t kv_prefix_elem(const kv_prefix *kv)
{
    return kv->half ? sizeof(uint16_t) : sizeof(float);
}

static inline void *kv_prefix_k(const kv_prefix *kv, int32_t layer)
{
    return (char *)kv->k + (size_t)layer * kv->capacity * kv->kv_dim * kv_prefix_elem(kv);
}

static inline void *kv_prefix_v(const kv_prefix *kv, int32_t layer)
{
    return (char *)kv->v + (size_t)layer * kv->capacity * kv->kv_dim * kv_prefix_elem(kv);
}

#endif
