/*
 * spec.c — the model maker's presets and the checks on a requested geometry.
 */
#include "mm_spec.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    mm_spec spec;
} preset;

/* Tiny presets are small enough for the test suite (tens of MB at most) yet
 * use each family's real tokenizer and embedding-row count; between them they
 * cover f32/f16/bf16, tied and untied heads, GQA, a q dimension different
 * from d_model (tiny-qwen3) and llama3 rope scaling (tiny-llama3). The qwen3
 * presets past them are real geometries, for the benchmarks only: 0.6B in
 * f16, 4B and 8B in bf16 and sharded as their checkpoints are shipped. */
static const preset PRESETS[] = {
    {"tiny-qwen3",
     {.arch = MM_ARCH_QWEN3,
      .n_layers = 3,
      .d_model = 64,
      .n_heads = 4,
      .n_kv_heads = 2,
      .head_dim = 32,
      .d_ff = 192,
      .vocab_size = 151936,
      .context_length = 4096,
      .rms_eps = 1e-6,
      .rope_theta = 1000000.0,
      .tied_embeddings = true,
      .dtype = MM_DTYPE_F32,
      .seed = 1,
      .tokenizer = "qwen3",
      .tokenizer_pre = "qwen2",
      .fallback_bos = "<|endoftext|>",
      .hf_shards = 1}},
    {"tiny-qwen2",
     {.arch = MM_ARCH_QWEN2,
      .n_layers = 2,
      .d_model = 64,
      .n_heads = 4,
      .n_kv_heads = 2,
      .head_dim = 16,
      .d_ff = 160,
      .vocab_size = 151936,
      .context_length = 4096,
      .rms_eps = 1e-6,
      .rope_theta = 1000000.0,
      .tied_embeddings = true,
      .dtype = MM_DTYPE_BF16,
      .seed = 2,
      .tokenizer = "qwen3",
      .tokenizer_pre = "qwen2",
      .fallback_bos = "<|endoftext|>",
      .hf_shards = 1}},
    {"tiny-llama",
     {.arch = MM_ARCH_LLAMA,
      .n_layers = 2,
      .d_model = 128,
      .n_heads = 4,
      .n_kv_heads = 2,
      .head_dim = 32,
      .d_ff = 320,
      .vocab_size = 32000,
      .context_length = 4096,
      .rms_eps = 1e-5,
      .rope_theta = 10000.0,
      .tied_embeddings = false,
      .dtype = MM_DTYPE_F32,
      .seed = 3,
      .tokenizer = "llama2",
      .hf_shards = 1}},
    {"tiny-llama3",
     {.arch = MM_ARCH_LLAMA,
      .n_layers = 2,
      .d_model = 64,
      .n_heads = 4,
      .n_kv_heads = 2,
      .head_dim = 16,
      .d_ff = 192,
      .vocab_size = 128256,
      .context_length = 2048,
      .rms_eps = 1e-5,
      .rope_theta = 500000.0,
      .tied_embeddings = true,
      .dtype = MM_DTYPE_F16,
      .seed = 4,
      .rope_scaling = MM_ROPE_SCALING_LLAMA3,
      .rope_factor = 8.0,
      .rope_low_freq_factor = 1.0,
      .rope_high_freq_factor = 4.0,
      .rope_original_context = 256,
      .tokenizer = "llama3",
      .tokenizer_pre = "llama-bpe",
      .hf_shards = 1}},
    {"qwen3-0.6b",
     {.arch = MM_ARCH_QWEN3,
      .n_layers = 28,
      .d_model = 1024,
      .n_heads = 16,
      .n_kv_heads = 8,
      .head_dim = 128,
      .d_ff = 3072,
      .vocab_size = 151936,
      .context_length = 40960,
      .rms_eps = 1e-6,
      .rope_theta = 1000000.0,
      .tied_embeddings = true,
      .dtype = MM_DTYPE_F16,
      .seed = 6,
      .tokenizer = "qwen3",
      .tokenizer_pre = "qwen2",
      .fallback_bos = "<|endoftext|>",
      .hf_shards = 1}},
    {"qwen3-4b",
     {.arch = MM_ARCH_QWEN3,
      .n_layers = 36,
      .d_model = 2560,
      .n_heads = 32,
      .n_kv_heads = 8,
      .head_dim = 128,
      .d_ff = 9728,
      .vocab_size = 151936,
      .context_length = 40960,
      .rms_eps = 1e-6,
      .rope_theta = 1000000.0,
      .tied_embeddings = true,
      .dtype = MM_DTYPE_BF16,
      .seed = 7,
      .tokenizer = "qwen3",
      .tokenizer_pre = "qwen2",
      .fallback_bos = "<|endoftext|>",
      .hf_shards = 3}},
    {"qwen3-8b",
     {.arch = MM_ARCH_QWEN3,
      .n_layers = 36,
      .d_model = 4096,
      .n_heads = 32,
      .n_kv_heads = 8,
      .head_dim = 128,
      .d_ff = 12288,
      .vocab_size = 151936,
      .context_length = 40960,
      .rms_eps = 1e-6,
      .rope_theta = 1000000.0,
      .tied_embeddings = false,
      .dtype = MM_DTYPE_BF16,
      .seed = 8,
      .tokenizer = "qwen3",
      .tokenizer_pre = "qwen2",
      .fallback_bos = "<|endoftext|>",
      .hf_shards = 5}},
};

#define N_PRESETS (sizeof PRESETS / sizeof PRESETS[0])

lms_status mm_spec_preset(const char *name, mm_spec *out, lms_error *err)
{
    char known[256] = "";
    for (size_t i = 0; i < N_PRESETS; i++) {
        if (strcmp(PRESETS[i].name, name) == 0) {
            *out = PRESETS[i].spec;
            snprintf(out->name, sizeof out->name, "%s", name);
            return LMS_OK;
        }
        size_t used = strlen(known);
        snprintf(known + used, sizeof known - used, "%s%s", i ? ", " : "", PRESETS[i].name);
    }
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "unknown_preset", "preset",
                    "unknown preset '%s' (known: %s)", name, known);
}

static lms_status need_positive(int64_t value, const char *what, lms_error *err)
{
    if (value > 0) return LMS_OK;
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", what,
                    "%s must be positive (got %lld)", what, (long long)value);
}

lms_status mm_spec_validate(const mm_spec *s, lms_error *err)
{
    const struct {
        int64_t value;
        const char *what;
    } sizes[] = {
        {s->n_layers, "layers"},        {s->d_model, "hidden"},    {s->n_heads, "heads"},
        {s->n_kv_heads, "kv-heads"},    {s->head_dim, "head-dim"}, {s->d_ff, "ffn"},
        {s->context_length, "context"}, {s->hf_shards, "shards"},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        lms_status st = need_positive(sizes[i].value, sizes[i].what, err);
        if (st != LMS_OK) return st;
    }
    /* Keeps every tensor's element count far inside int64 and size_t. */
    const int64_t max_dim = 1 << 20;
    if (s->d_model > max_dim || s->d_ff > max_dim || s->vocab_size > (1 << 24) ||
        (int64_t)s->n_heads * s->head_dim > max_dim || s->n_layers > 4096)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", NULL,
                        "geometry too large for the model maker");
    if (s->vocab_size < 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", "vocab-size",
                        "vocab size must not be negative");
    if (s->n_heads % s->n_kv_heads != 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", "kv-heads",
                        "heads (%d) must be a multiple of kv-heads (%d)", s->n_heads,
                        s->n_kv_heads);
    if (s->head_dim % 2 != 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", "head-dim",
                        "head-dim must be even for RoPE (got %d)", s->head_dim);
    if (!(s->rms_eps > 0) || !(s->rope_theta > 1))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_geometry", NULL,
                        "rms-eps must be > 0 and rope-theta > 1");
    if (s->rope_scaling != MM_ROPE_SCALING_NONE && !(s->rope_factor >= 1))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_rope_scaling", "rope-factor",
                        "rope scaling factor must be >= 1");
    if (s->rope_scaling == MM_ROPE_SCALING_LLAMA3 &&
        (s->rope_original_context <= 0 || !(s->rope_low_freq_factor > 0) ||
         !(s->rope_high_freq_factor > s->rope_low_freq_factor)))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_rope_scaling", NULL,
                        "llama3 rope scaling needs original-context > 0 and "
                        "0 < low-freq-factor < high-freq-factor");
    if (s->tokenizer[0] == '\0')
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "missing_tokenizer", "vocab-from",
                        "no tokenizer given (--vocab-from)");
    return LMS_OK;
}

const char *mm_arch_name(mm_arch arch)
{
    switch (arch) {
    case MM_ARCH_LLAMA:
        return "llama";
    case MM_ARCH_QWEN2:
        return "qwen2";
    case MM_ARCH_QWEN3:
        return "qwen3";
    }
    return "?";
}

lms_status mm_arch_parse(const char *text, mm_arch *out, lms_error *err)
{
    for (int a = MM_ARCH_LLAMA; a <= MM_ARCH_QWEN3; a++) {
        if (strcmp(text, mm_arch_name((mm_arch)a)) == 0) {
            *out = (mm_arch)a;
            return LMS_OK;
        }
    }
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_arch", "arch",
                    "unknown architecture '%s' (llama, qwen2, qwen3)", text);
}

lms_status mm_rope_scaling_parse(const char *text, mm_rope_scaling *out, lms_error *err)
{
    static const char *const names[] = {"none", "linear", "llama3"};
    for (int k = MM_ROPE_SCALING_NONE; k <= MM_ROPE_SCALING_LLAMA3; k++) {
        if (strcmp(text, names[k]) == 0) {
            *out = (mm_rope_scaling)k;
            return LMS_OK;
        }
    }
    return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_rope_scaling", "rope-scaling",
                    "unknown rope scaling '%s' (none, linear, llama3)", text);
}

mm_dtype mm_spec_checkpoint_dtype(const mm_spec *spec)
{
    return mm_dtype_about(spec->dtype)->block > 1 ? MM_DTYPE_F32 : spec->dtype;
}
