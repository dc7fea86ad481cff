/*
 * engine.c — opening and closing an engine: the compute tier, the model and
 * its packed weights, its tokenizer, the options and the prefix cache.
 */
#include "engine_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "tier.h"
#include "gguf.h"
#include "matmul.h"
#include "model_weights.h"
#include "names.h"
#include "tokenizer.h"

static const char *const ALGORITHM_NAMES[] = {
    [LMS_ALGO_AUTO] = "auto",
    [LMS_ALGO_SERIAL] = "serial",
    [LMS_ALGO_PACKED_DENSE] = "packed_dense",
    [LMS_ALGO_PACKED_SEGMENT] = "packed_segment",
    [LMS_ALGO_PREFILL_EXTEND] = "prefill_extend",
};

const char *lms_algorithm_name(lms_algorithm algo)
{
    return lms_name_of(ALGORITHM_NAMES, LMS_COUNT_OF(ALGORITHM_NAMES), (unsigned)algo);
}

bool lms_algorithm_parse(const char *name, lms_algorithm *out)
{
    unsigned value;
    if (!lms_name_find(ALGORITHM_NAMES, LMS_COUNT_OF(ALGORITHM_NAMES), name, &value)) return false;
    *out = (lms_algorithm)value;
    return true;
}

static const char *const KV_DTYPE_NAMES[] = {
    [LMS_KV_DTYPE_AUTO] = "auto", [LMS_KV_DTYPE_F32] = "f32", [LMS_KV_DTYPE_F16] = "f16"};

const char *lms_kv_dtype_name(lms_kv_dtype dtype)
{
    return lms_name_of(KV_DTYPE_NAMES, LMS_COUNT_OF(KV_DTYPE_NAMES), (unsigned)dtype);
}

bool lms_kv_dtype_parse(const char *name, lms_kv_dtype *out)
{
    unsigned value;
    if (!lms_name_find(KV_DTYPE_NAMES, LMS_COUNT_OF(KV_DTYPE_NAMES), name, &value)) return false;
    *out = (lms_kv_dtype)value;
    return true;
}

void lms_engine_options_default(lms_engine_options *opt)
{
    memset(opt, 0, sizeof *opt);
    opt->algorithm = LMS_ALGO_AUTO;
    opt->max_packed_tokens = 8192;
    opt->dense_mask_max_tokens = 8192;
    opt->prefix_cache_bytes = (size_t)256 << 20;
    opt->delimiter = -1;
    opt->max_items = 10000;
    opt->max_sequence_tokens = 0; /* the model's context length */
}

static lms_status check_options(const lms_engine_options *o, const lms_model_config *c,
                                lms_error *err)
{
    if (o->max_packed_tokens < 16)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "max_packed_tokens",
                        "max_packed_tokens must be at least 16 (got %d)", o->max_packed_tokens);
    if (o->dense_mask_max_tokens < 0 || o->max_items < 1 || o->max_sequence_tokens < 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                        "limits must be positive (max_items %d, max_sequence_tokens %d)",
                        o->max_items, o->max_sequence_tokens);
    if (o->delimiter >= c->vocab_size)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "token_id_exceeds_vocab", "delimiter",
                        "delimiter %d is outside the vocabulary (%d tokens)", o->delimiter,
                        c->vocab_size);
    return LMS_OK;
}

static lms_status load_tokenizer(lms_model *m, lms_tokenizer **tok, lms_error *err)
{
    *tok = NULL;
    if (m->gguf) {
        if (!gguf_has_key(m->gguf, "tokenizer.ggml.model")) return LMS_OK;
        return lms_tokenizer_load_gguf(m->gguf, tok, err);
    }
    if (m->hf_dir) {
        size_t n = strlen(m->hf_dir) + sizeof "/tokenizer.json";
        char *path = malloc(n);
        if (!path) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
        snprintf(path, n, "%s/tokenizer.json", m->hf_dir);
        FILE *f = fopen(path, "rb");
        free(path);
        if (!f) return LMS_OK;
        fclose(f);
        return lms_tokenizer_load_hf(m->hf_dir, tok, err);
    }
    return LMS_OK;
}

lms_status lms_engine_open(const char *model_path, const lms_engine_options *opt, lms_engine **out,
                           lms_error *err)
{
    *out = NULL;
    lms_engine *e = calloc(1, sizeof *e);
    if (!e) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    if (opt)
        e->opt = *opt;
    else
        lms_engine_options_default(&e->opt);

    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    if (e->opt.test_drop_amx) {
        cpu.amx = true; /* the OS refuses it, or the forced mismatch fails it */
        compute_tier_force_mismatch = true;
    }
    if (e->opt.test_self_check_signal) {
        cpu.avx512_bf16 = true; /* its self-check then faults */
        compute_tier_proof_signal = e->opt.test_self_check_signal;
    }
    const compute_tier *tier;
    lms_status st =
        compute_tier_select(e->opt.isa, &cpu, &tier, e->isa_dropped, sizeof e->isa_dropped, err);
    if (e->opt.test_drop_amx) compute_tier_force_mismatch = false;
    if (e->opt.test_self_check_signal) compute_tier_proof_signal = 0;
    if (st != LMS_OK) goto fail;
    if ((unsigned)e->opt.kv_dtype > LMS_KV_DTYPE_F16) {
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "kv_dtype", "unknown kv_dtype %d",
                      (int)e->opt.kv_dtype);
        goto fail;
    }
    if (e->opt.kv_dtype == LMS_KV_DTYPE_F16 && !tier->kernels->w16) {
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "kv_dtype",
                      "f16 keys and values need a compute tier with 16-bit kernels; %s has none",
                      tier->name);
        goto fail;
    }
    st = lms_model_load(model_path, &e->opt.open_stop, &e->model, err);
    if (st == LMS_OK)
        st = model_weights_create(e->model, tier, e->opt.precision, &e->opt.open_stop, &e->weights,
                                  err);
    if (st != LMS_OK) goto fail;
    const lms_model_config *c = &e->model->cfg;
    if (e->opt.max_sequence_tokens == 0) e->opt.max_sequence_tokens = c->context_length;
    st = check_options(&e->opt, c, err);
    if (st != LMS_OK) goto fail;
    st = load_tokenizer(e->model, &e->tokenizer, err);
    if (st != LMS_OK) {
        lms_fail_context(err, "tokenizer of %s", model_path);
        goto fail;
    }

    /* By default attention is in 16 bits wherever the projections are not
     * all f32: half the memory traffic and prefix cache of f32 keys. */
    const bool kv16 = e->opt.kv_dtype == LMS_KV_DTYPE_AUTO
                          ? tier->kernels->w16 && strcmp(e->weights->precision, "f32") != 0
                          : e->opt.kv_dtype == LMS_KV_DTYPE_F16;
    e->tune = (forward_tuning){ATTN_BLOCK_ROWS, {tier}, kv16};

    e->cache = prefix_cache_create(e->opt.prefix_cache_bytes);
    if (!e->cache) {
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
        goto fail;
    }
    *out = e;
    return LMS_OK;
fail:
    lms_engine_close(e);
    return st;
}

void lms_engine_close(lms_engine *e)
{
    if (!e) return;
    prefix_cache_free(e->cache);
    lms_tokenizer_free(e->tokenizer);
    model_weights_free(e->weights);
    lms_model_free(e->model);
    free(e);
}

/* The matrices' formats, bytes and elements, and the kernels they run on. */
static void describe_weights(const lms_engine *e, lms_model_info *out)
{
    const lms_weights **all = malloc(MODEL_WEIGHTS_MAX(e->weights->n_layers) * sizeof *all);
    if (!all) return;
    const int32_t n = model_weights_list(e->weights, all);
    int counts[LMS_WEIGHTS_Q8 + 1] = {0}, tile_q8 = 0; /* Q8 on the tier's own kernel */
    for (int32_t i = 0; i < n; i++) {
        counts[all[i]->format]++;
        tile_q8 += all[i]->format == LMS_WEIGHTS_Q8 && all[i]->layout.signed_codes;
        out->weight_bytes += (int64_t)lms_weights_bytes(all[i]);
        out->parameters += (int64_t)all[i]->n * all[i]->k;
    }
    free(all);
    size_t used = 0;
    for (int f = 0; f <= LMS_WEIGHTS_Q8; f++)
        if (counts[f] && used < sizeof out->weights)
            used += (size_t)snprintf(out->weights + used, sizeof out->weights - used, "%s%s x%d",
                                     used ? ", " : "",
                                     lms_weights_format_name((lms_weights_format)f), counts[f]);
    const compute_tier *tier = e->tune.matmul.tier;
    out->isa = tier->name;
    snprintf(out->isa_dropped, sizeof out->isa_dropped, "%s", e->isa_dropped);
    used = 0;
    if (counts[LMS_WEIGHTS_F32])
        used +=
            (size_t)snprintf(out->kernels, sizeof out->kernels, "f32 %s", tier->kernels->f32->isa);
    if ((counts[LMS_WEIGHTS_F16] || counts[LMS_WEIGHTS_BF16]) && used < sizeof out->kernels)
        used += (size_t)snprintf(
            out->kernels + used, sizeof out->kernels - used, "%s16-bit %s", used ? ", " : "",
            counts[LMS_WEIGHTS_BF16] && tier->bf16_activations ? tier->name
                                                               : tier->kernels->w16->isa);
    if (tile_q8 && used < sizeof out->kernels)
        used += (size_t)snprintf(out->kernels + used, sizeof out->kernels - used, "%sint8 %s",
                                 used ? ", " : "", tier->name);
    if (counts[LMS_WEIGHTS_Q8] > tile_q8 && used < sizeof out->kernels)
        snprintf(out->kernels + used, sizeof out->kernels - used, "%sint8 %s", used ? ", " : "",
                 tier->kernels->q8->isa);
}

void lms_engine_model_info(const lms_engine *e, lms_model_info *out)
{
    const lms_model_config *c = &e->model->cfg;
    memset(out, 0, sizeof *out);
    snprintf(out->name, sizeof out->name, "%s", c->name);
    out->architecture = lms_arch_name(c->arch);
    out->n_layers = c->n_layers;
    out->d_model = c->d_model;
    out->n_heads = c->n_heads;
    out->n_kv_heads = c->n_kv_heads;
    out->head_dim = c->head_dim;
    out->d_ff = c->d_ff;
    out->vocab_size = c->vocab_size;
    out->context_length = c->context_length;
    out->precision = e->weights->precision;
    out->kv_dtype = e->tune.kv16 ? "f16" : "f32";
    snprintf(out->precision_reason, sizeof out->precision_reason, "%s",
             e->weights->precision_reason);
    describe_weights(e, out);
}

const lms_engine_options *lms_engine_options_get(const lms_engine *e)
{
    return &e->opt;
}

void lms_engine_cache_stats(lms_engine *e, lms_cache_stats *out)
{
    prefix_cache_stats s;
    prefix_cache_stats_get(e->cache, &s);
    *out = (lms_cache_stats){.hits = s.hits,
                             .misses = s.misses,
                             .evictions = s.evictions,
                             .bytes = s.bytes,
                             .max_bytes = s.max_bytes};
}

const lms_tokenizer *lms_engine_tokenizer(const lms_engine *e)
{
    return e->tokenizer;
}
