/*
 * test_model.c — lms_model_load (engine/model/model*.c): tiny llama, qwen2 and
 * qwen3 checkpoints written here as GGUF files (F32, F16, BF16, Q8_0, and
 * every block type of ggml_blocks.h mixed in one file) and
 * as Hugging Face directories (single and sharded safetensors, F32, F16,
 * BF16) load with the exact geometry and the exact weight values; and
 * every way a checkpoint can be wrong (missing or unexpected tensors,
 * wrong shapes, unsupported types and architectures, bad config) fails
 * with a precise error.
 *
 * Weight values are k/64 with |k| <= 64, which every stored type holds
 * exactly, so the loaded f32 must equal the generator bit for bit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "ggml_blocks.h"
#include "gguf.h"
#include "model.h"
#include "tensor_convert.h"
#include "case_fixture.h"
#include "model_files.h"

typedef struct {
    lms_arch arch;
    int layers, d, heads, kv_heads, head_dim, ff, vocab;
} geometry;

static geometry tiny(lms_arch arch)
{
    /* qwen3 gets a head_dim that is not d/heads, as Qwen3 itself has. */
    return (geometry){arch, 2, 64, 4, 2, arch == LMS_ARCH_QWEN3 ? 32 : 16, 96, 50};
}

typedef enum { DIM_NONE, DIM_D, DIM_Q, DIM_KV, DIM_FF, DIM_VOCAB, DIM_HEAD } dim_kind;

#define ARCH_ALL   7
#define ARCH_QWEN2 (1 << 1)
#define ARCH_QWEN3 (1 << 2)

/* Every weight: GGUF and HF names (per-layer ones after "blk.N." /
 * "model.layers.N."), shape as (rows, cols), where the model keeps it. */
typedef struct {
    const char *gguf, *hf;
    dim_kind rows, cols;
    bool per_layer;
    size_t field; /* offsetof into lms_model or lms_layer_weights */
    int archs;    /* bit (1 << (arch - 1)) */
} weight_def;

static const weight_def defs[] = {
    {"token_embd.weight", "model.embed_tokens.weight", DIM_VOCAB, DIM_D, false,
     offsetof(lms_model, tok_embd), ARCH_ALL},
    {"output_norm.weight", "model.norm.weight", DIM_D, DIM_NONE, false,
     offsetof(lms_model, output_norm), ARCH_ALL},
    {"output.weight", "lm_head.weight", DIM_VOCAB, DIM_D, false, offsetof(lms_model, output),
     ARCH_ALL},
    {"attn_norm.weight", "input_layernorm.weight", DIM_D, DIM_NONE, true,
     offsetof(lms_layer_weights, attn_norm), ARCH_ALL},
    {"attn_q.weight", "self_attn.q_proj.weight", DIM_Q, DIM_D, true,
     offsetof(lms_layer_weights, wq), ARCH_ALL},
    {"attn_k.weight", "self_attn.k_proj.weight", DIM_KV, DIM_D, true,
     offsetof(lms_layer_weights, wk), ARCH_ALL},
    {"attn_v.weight", "self_attn.v_proj.weight", DIM_KV, DIM_D, true,
     offsetof(lms_layer_weights, wv), ARCH_ALL},
    {"attn_q.bias", "self_attn.q_proj.bias", DIM_Q, DIM_NONE, true, offsetof(lms_layer_weights, bq),
     ARCH_QWEN2},
    {"attn_k.bias", "self_attn.k_proj.bias", DIM_KV, DIM_NONE, true,
     offsetof(lms_layer_weights, bk), ARCH_QWEN2},
    {"attn_v.bias", "self_attn.v_proj.bias", DIM_KV, DIM_NONE, true,
     offsetof(lms_layer_weights, bv), ARCH_QWEN2},
    {"attn_q_norm.weight", "self_attn.q_norm.weight", DIM_HEAD, DIM_NONE, true,
     offsetof(lms_layer_weights, q_norm), ARCH_QWEN3},
    {"attn_k_norm.weight", "self_attn.k_norm.weight", DIM_HEAD, DIM_NONE, true,
     offsetof(lms_layer_weights, k_norm), ARCH_QWEN3},
    {"attn_output.weight", "self_attn.o_proj.weight", DIM_D, DIM_Q, true,
     offsetof(lms_layer_weights, wo), ARCH_ALL},
    {"ffn_norm.weight", "post_attention_layernorm.weight", DIM_D, DIM_NONE, true,
     offsetof(lms_layer_weights, ffn_norm), ARCH_ALL},
    {"ffn_gate.weight", "mlp.gate_proj.weight", DIM_FF, DIM_D, true,
     offsetof(lms_layer_weights, w_gate), ARCH_ALL},
    {"ffn_up.weight", "mlp.up_proj.weight", DIM_FF, DIM_D, true, offsetof(lms_layer_weights, w_up),
     ARCH_ALL},
    {"ffn_down.weight", "mlp.down_proj.weight", DIM_D, DIM_FF, true,
     offsetof(lms_layer_weights, w_down), ARCH_ALL},
};
#define N_DEFS (sizeof defs / sizeof defs[0])

static uint64_t dim(const geometry *g, dim_kind k)
{
    switch (k) {
    case DIM_NONE:
        return 1;
    case DIM_D:
        return (uint64_t)g->d;
    case DIM_Q:
        return (uint64_t)(g->heads * g->head_dim);
    case DIM_KV:
        return (uint64_t)(g->kv_heads * g->head_dim);
    case DIM_FF:
        return (uint64_t)g->ff;
    case DIM_VOCAB:
        return (uint64_t)g->vocab;
    case DIM_HEAD:
        return (uint64_t)g->head_dim;
    }
    return 0;
}

static bool def_in_arch(const weight_def *w, lms_arch arch)
{
    return (w->archs >> (arch - 1)) & 1;
}

/* The deterministic value of element i of the weight called name (its
 * GGUF name): k/64 with k in -64..64. */
static float weight_value(const char *name, size_t i)
{
    uint32_t h = 2166136261u;
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 16777619u;
    return (float)((int)((h + i * 37u) % 129u) - 64) / 64.0f;
}

static float *weight_values(const char *name, size_t n)
{
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++)
        v[i] = weight_value(name, i);
    return v;
}

/* Encodes n f32 values as a stored type into out. */
static void encode(const float *v, size_t n, uint32_t ggml_type, mf_buf *out)
{
    *out = (mf_buf){0};
    for (size_t i = 0; i < n; i++) {
        switch (ggml_type) {
        case GGML_TYPE_F32:
            mf_buf_f32(out, v[i]);
            break;
        case GGML_TYPE_F16:
            mf_buf_u16(out, f16_bits_exact(v[i]));
            break;
        case GGML_TYPE_BF16:
            mf_buf_u16(out, bf16_bits_exact(v[i]));
            break;
        case GGML_TYPE_Q8_0:
            if (i % 32 == 0) mf_buf_u16(out, f16_bits_exact(1.0f / 64)); /* block scale */
            mf_buf_u8(out, (uint8_t)(int8_t)lrintf(v[i] * 64));
            break;
        default:
            fail_msg("test cannot encode type %u", ggml_type);
        }
    }
}

/* The full tensor name of a weight in a layer (layer ignored for globals). */
static void full_name(char *buf, size_t size, bool gguf, const weight_def *w, int layer)
{
    const char *name = gguf ? w->gguf : w->hf;
    if (w->per_layer)
        snprintf(buf, size, "%s%d.%s", gguf ? "blk." : "model.layers.", layer, name);
    else
        snprintf(buf, size, "%s", name);
}

/* ---- GGUF ---- */

typedef struct {
    uint32_t matrix_type; /* 2-D weights; 1-D ones are always f32, as llama.cpp writes them */
    bool tied;            /* no output.weight */
    const char *omit_key; /* an {arch}.* suffix left out */
} gguf_options;

/* Adds a weight with the given shape (rows, cols) and generated values. */
static void add_gguf_weight(gguf_writer *w, const char *name, uint64_t rows, uint64_t cols,
                            uint32_t type)
{
    size_t n = (size_t)(rows * cols);
    float *v = weight_values(name, n);
    mf_buf data;
    encode(v, n, cols > 1 ? type : GGML_TYPE_F32, &data);
    uint64_t ne[2] = {cols > 1 ? cols : rows, rows};
    gw_tensor(w, name, cols > 1 ? type : GGML_TYPE_F32, cols > 1 ? 2 : 1, ne, data.data, data.len);
    mf_buf_free(&data);
    free(v);
}

static void gw_arch_u32(gguf_writer *w, const gguf_options *o, const char *arch, const char *suffix,
                        uint32_t v)
{
    if (o->omit_key && strcmp(o->omit_key, suffix) == 0) return;
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    mf_gguf_u32(&w->meta, key, v);
}

static void build_gguf(gguf_writer *w, const geometry *g, const gguf_options *o)
{
    const char *arch = lms_arch_name(g->arch);
    gw_init(w);
    mf_gguf_str(&w->meta, "general.architecture", arch);
    mf_gguf_str(&w->meta, "general.name", "tiny-test");
    gw_arch_u32(w, o, arch, "block_count", (uint32_t)g->layers);
    gw_arch_u32(w, o, arch, "context_length", 256);
    gw_arch_u32(w, o, arch, "embedding_length", (uint32_t)g->d);
    gw_arch_u32(w, o, arch, "feed_forward_length", (uint32_t)g->ff);
    gw_arch_u32(w, o, arch, "attention.head_count", (uint32_t)g->heads);
    gw_arch_u32(w, o, arch, "attention.head_count_kv", (uint32_t)g->kv_heads);
    if (g->head_dim != g->d / g->heads)
        gw_arch_u32(w, o, arch, "attention.key_length", (uint32_t)g->head_dim);
    char key[128];
    snprintf(key, sizeof key, "%s.attention.layer_norm_rms_epsilon", arch);
    mf_gguf_f32(&w->meta, key, 1e-6f);
    if (g->arch != LMS_ARCH_LLAMA) {
        snprintf(key, sizeof key, "%s.rope.freq_base", arch);
        mf_gguf_f32(&w->meta, key, 1e6f);
    }
    for (int l = -1; l < g->layers; l++) {
        for (size_t i = 0; i < N_DEFS; i++) {
            const weight_def *d = &defs[i];
            if (d->per_layer != (l >= 0) || !def_in_arch(d, g->arch)) continue;
            if (o->tied && strcmp(d->gguf, "output.weight") == 0) continue;
            char name[128];
            full_name(name, sizeof name, true, d, l);
            add_gguf_weight(w, name, dim(g, d->rows), d->cols ? dim(g, d->cols) : 1,
                            o->matrix_type);
        }
    }
}

/* Removes the tensor called name from the writer. */
static void drop_gguf_tensor(gguf_writer *w, const char *name)
{
    for (size_t i = 0; i < w->n_tensors; i++) {
        if (strcmp(w->tensors[i].name, name) != 0) continue;
        mf_buf_free(&w->tensors[i].data);
        memmove(&w->tensors[i], &w->tensors[i + 1], (w->n_tensors - i - 1) * sizeof w->tensors[0]);
        w->n_tensors--;
        return;
    }
    fail_msg("no tensor %s to drop", name);
}

typedef struct {
    char dir[64];
    char path[160];
} scratch;

static void scratch_init(scratch *s)
{
    snprintf(s->dir, sizeof s->dir, "/tmp/lms_test_model_XXXXXX");
    assert_non_null(mkdtemp(s->dir));
    snprintf(s->path, sizeof s->path, "%s/model.gguf", s->dir);
}

static void scratch_free(scratch *s)
{
    DIR *d = opendir(s->dir);
    assert_non_null(d);
    struct dirent *e;
    char path[512];
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", s->dir, e->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(s->dir);
}

/* cmocka fixture: a scratch directory in *state for the test's files. */
static int scratch_setup(void **state)
{
    scratch *s = malloc(sizeof *s);
    if (!s) return -1;
    scratch_init(s);
    *state = s;
    return 0;
}

static int scratch_teardown(void **state)
{
    scratch_free(*state);
    free(*state);
    return 0;
}

#define WITH_SCRATCH(test) cmocka_unit_test_setup_teardown(test, scratch_setup, scratch_teardown)

static void write_gguf(const gguf_writer *w, const char *path)
{
    mf_buf b;
    gw_finish(w, &b);
    write_file(path, b.data, b.len);
    mf_buf_free(&b);
}

/* Loads path, expecting failure with status and a message containing needle. */
static void expect_load_error(const char *path, lms_status status, const char *needle)
{
    lms_model *m = (lms_model *)1;
    lms_error err = {0};
    lms_status st = lms_model_load(path, NULL, &m, &err);
    if (st != status || !strstr(err.msg, needle))
        fail_msg("expected %s containing \"%s\", got %s: %s", lms_status_name(status), needle,
                 lms_status_name(st), err.msg);
    assert_null(m);
}

static lms_model *load_ok(const char *path)
{
    lms_model *m;
    lms_error err = {0};
    if (lms_model_load(path, NULL, &m, &err) != LMS_OK) fail_msg("load failed: %s", err.msg);
    return m;
}

/* A weight's f32 values: a vector's pointer, or a matrix's stored values
 * converted (lms_matrix; *owned is then that buffer, for the caller to
 * free). NULL for a weight the model does not have. */
static const float *model_weight(const lms_model *m, const weight_def *d, int layer, float **owned)
{
    *owned = NULL;
    const char *field =
        (d->per_layer ? (const char *)&m->layers[layer] : (const char *)m) + d->field;
    if (d->cols != DIM_NONE) {
        lms_matrix w;
        memcpy(&w, field, sizeof w);
        if (!w.data) return NULL;
        const size_t n = (size_t)w.n * (size_t)w.k;
        *owned = malloc(n * sizeof **owned);
        assert_non_null(*owned);
        const lms_convert_job job = {w.type, w.data, *owned, n};
        lms_error err = {0};
        assert_int_equal(lms_convert_to_f32(&job, 1, NULL, &err), LMS_OK);
        return *owned;
    }
    const float *p;
    memcpy(&p, field, sizeof p);
    return p;
}

/* Every weight the architecture has holds exactly the generated values;
 * the others are NULL. */
static void check_weights(const lms_model *m, const geometry *g)
{
    for (int l = -1; l < g->layers; l++) {
        for (size_t i = 0; i < N_DEFS; i++) {
            const weight_def *d = &defs[i];
            if (d->per_layer != (l >= 0)) continue;
            float *owned;
            const float *p = model_weight(m, d, l, &owned);
            if (!def_in_arch(d, g->arch)) {
                assert_null(p);
                continue;
            }
            char name[128];
            full_name(name, sizeof name, true, d, l);
            if (m->cfg.tied_embeddings && strcmp(d->gguf, "output.weight") == 0)
                strcpy(name, "token_embd.weight");
            assert_non_null(p);
            size_t n = (size_t)(dim(g, d->rows) * (d->cols ? dim(g, d->cols) : 1));
            for (size_t j = 0; j < n; j++)
                if (p[j] != weight_value(name, j))
                    fail_msg("%s[%zu] = %g, expected %g", name, j, p[j], weight_value(name, j));
            free(owned);
        }
    }
}

static void check_geometry(const lms_model *m, const geometry *g)
{
    const lms_model_config *c = &m->cfg;
    assert_int_equal(c->arch, g->arch);
    assert_int_equal(c->n_layers, g->layers);
    assert_int_equal(c->d_model, g->d);
    assert_int_equal(c->n_heads, g->heads);
    assert_int_equal(c->n_kv_heads, g->kv_heads);
    assert_int_equal(c->head_dim, g->head_dim);
    assert_int_equal(c->d_ff, g->ff);
    assert_int_equal(c->vocab_size, g->vocab);
    assert_int_equal(c->context_length, 256);
    assert_true(c->rms_eps == 1e-6f);
}

/* Loads path, which must succeed, and checks the model's geometry and
 * weights against what was written. */
static lms_model *load_checked(const char *path, const geometry *g)
{
    lms_model *m = load_ok(path);
    check_geometry(m, g);
    check_weights(m, g);
    return m;
}

static lms_model *write_gguf_and_load(const gguf_writer *w, const char *path, const geometry *g)
{
    write_gguf(w, path);
    return load_checked(path, g);
}

static void test_gguf_qwen3_f32_used_in_place(void **state)
{
    const scratch *s = *state;
    geometry g = tiny(LMS_ARCH_QWEN3);
    gguf_writer w;
    build_gguf(&w, &g, &(gguf_options){GGML_TYPE_F32, false, NULL});
    size_t before = lms_alloc_current_bytes();
    lms_model *m = write_gguf_and_load(&w, s->path, &g);
    assert_int_equal(m->cfg.format, LMS_FORMAT_GGUF);
    assert_string_equal(m->cfg.name, "tiny-test");
    assert_true(m->cfg.rope_theta == 1e6f);
    assert_int_equal(m->cfg.rope_pairing, LMS_ROPE_NEOX);
    assert_true(m->cfg.rope_scale_linear == 1.0f);
    assert_null(m->cfg.rope_freq_factors);
    assert_false(m->cfg.tied_embeddings);
    assert_non_null(m->gguf);
    assert_null(m->hf_dir);
    /* weights point into the mapping: nothing was allocated for them. */
    assert_ptr_equal(m->tok_embd.data, gguf_find_tensor(m->gguf, "token_embd.weight")->data);
    assert_ptr_equal(m->layers[1].wq.data, gguf_find_tensor(m->gguf, "blk.1.attn_q.weight")->data);
    assert_int_equal(m->layers[1].wq.type, LMS_DTYPE_F32);
    assert_true(m->file_backed);
    assert_int_equal(lms_alloc_current_bytes(), before);
    lms_model_free(m);
    assert_int_equal(lms_alloc_current_bytes(), before);
    gw_free(&w);
}

static void test_gguf_llama_converted_tied_with_rope_freqs(void **state)
{
    const scratch *s = *state;
    const uint32_t types[] = {GGML_TYPE_F16, GGML_TYPE_BF16, GGML_TYPE_Q8_0};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        geometry g = tiny(LMS_ARCH_LLAMA);
        gguf_writer w;
        build_gguf(&w, &g, &(gguf_options){types[t], true, NULL});
        add_gguf_weight(&w, "rope_freqs.weight", (uint64_t)g.head_dim / 2, 1, GGML_TYPE_F32);
        size_t before = lms_alloc_current_bytes();
        lms_model *m = write_gguf_and_load(&w, s->path, &g);
        assert_int_equal(m->cfg.rope_pairing, LMS_ROPE_NORM);
        assert_true(m->cfg.rope_theta == 10000.0f);
        assert_true(m->cfg.tied_embeddings);
        assert_ptr_equal(m->output.data, m->tok_embd.data);
        assert_non_null(m->cfg.rope_freq_factors);
        for (int i = 0; i < g.head_dim / 2; i++)
            assert_true(m->cfg.rope_freq_factors[i] ==
                        weight_value("rope_freqs.weight", (size_t)i));
        /* The matrices are handed over as stored, in the mapping: the
         * model holds no copy of them. */
        assert_int_equal(m->layers[0].w_down.type, types[t] == GGML_TYPE_F16    ? LMS_DTYPE_F16
                                                   : types[t] == GGML_TYPE_BF16 ? LMS_DTYPE_BF16
                                                                                : LMS_DTYPE_Q8_0);
        assert_int_equal(lms_alloc_current_bytes() - before, 0);
        lms_model_free(m);
        assert_int_equal(lms_alloc_current_bytes(), before);
        gw_free(&w);
    }
}

/* A file of every block type at once, one per matrix (as llama.cpp's mixed
 * files have several): each matrix loads as the decoding of its own stored
 * blocks, whatever their bytes. */
static void test_gguf_mixed_block_types(void **state)
{
    const scratch *s = *state;
    static const struct {
        uint32_t ggml;
        lms_dtype dtype;
    } types[] = {
        {GGML_TYPE_Q4_0, LMS_DTYPE_Q4_0}, {GGML_TYPE_Q4_1, LMS_DTYPE_Q4_1},
        {GGML_TYPE_Q5_0, LMS_DTYPE_Q5_0}, {GGML_TYPE_Q5_1, LMS_DTYPE_Q5_1},
        {GGML_TYPE_Q8_0, LMS_DTYPE_Q8_0}, {GGML_TYPE_Q4_K, LMS_DTYPE_Q4_K},
        {GGML_TYPE_Q5_K, LMS_DTYPE_Q5_K}, {GGML_TYPE_Q6_K, LMS_DTYPE_Q6_K},
    };
    const size_t n_types = sizeof types / sizeof types[0];
    /* Rows of whole 256-element super-blocks for every matrix. */
    geometry g = {LMS_ARCH_QWEN3, 2, 256, 4, 2, 64, 512, 50};
    gguf_writer w;
    build_gguf(&w, &g, &(gguf_options){GGML_TYPE_F32, false, NULL});
    typedef struct {
        const weight_def *def;
        int layer;
        lms_dtype dtype;
    } matrix;
    matrix matrices[2 * N_DEFS];
    size_t n = 0;
    uint64_t seed = 1;
    for (int l = -1; l < g.layers; l++) {
        for (size_t i = 0; i < N_DEFS; i++) {
            const weight_def *d = &defs[i];
            if (d->per_layer != (l >= 0) || !d->cols || !def_in_arch(d, g.arch)) continue;
            char name[128];
            full_name(name, sizeof name, true, d, l);
            const uint64_t rows = dim(&g, d->rows), cols = dim(&g, d->cols);
            const lms_dtype t = types[n % n_types].dtype;
            const size_t bytes =
                (size_t)(rows * cols) / lms_dtype_block_elements(t) * lms_dtype_block_bytes(t);
            unsigned char *data = malloc(bytes);
            assert_non_null(data);
            for (size_t b = 0; b < bytes; b++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                data[b] = (unsigned char)(seed >> 56);
            }
            drop_gguf_tensor(&w, name);
            gw_tensor(&w, name, types[n % n_types].ggml, 2, (uint64_t[]){cols, rows}, data, bytes);
            free(data);
            matrices[n++] = (matrix){d, l, t};
        }
    }
    assert_true(n >= 2 * n_types);
    write_gguf(&w, s->path);
    lms_model *m = load_ok(s->path);
    check_geometry(m, &g);
    for (size_t i = 0; i < n; i++) {
        char name[128];
        full_name(name, sizeof name, true, matrices[i].def, matrices[i].layer);
        const gguf_tensor *t = gguf_find_tensor(m->gguf, name);
        const size_t count = (size_t)t->n_elements;
        float *want = malloc(count * sizeof *want);
        assert_non_null(want);
        lms_ggml_blocks_to_f32(matrices[i].dtype, t->data,
                               count / lms_dtype_block_elements(matrices[i].dtype), want);
        float *owned;
        assert_memory_equal(model_weight(m, matrices[i].def, matrices[i].layer, &owned), want,
                            count * sizeof *want);
        free(owned);
        free(want);
    }
    lms_model_free(m);
    gw_free(&w);
}

static void test_gguf_qwen2_biases_and_linear_rope(void **state)
{
    const scratch *s = *state;
    geometry g = tiny(LMS_ARCH_QWEN2);
    gguf_writer w;
    build_gguf(&w, &g, &(gguf_options){GGML_TYPE_Q8_0, false, NULL});
    mf_gguf_str(&w.meta, "qwen2.rope.scaling.type", "linear");
    mf_gguf_f32(&w.meta, "qwen2.rope.scaling.factor", 4.0f);
    lms_model *m = write_gguf_and_load(&w, s->path, &g);
    assert_non_null(m->layers[0].bq);
    assert_int_equal(m->cfg.rope_pairing, LMS_ROPE_NEOX);
    assert_true(m->cfg.rope_scale_linear == 4.0f);
    assert_false(m->cfg.tied_embeddings);
    assert_true(m->output.data != m->tok_embd.data);
    lms_model_free(m);
    gw_free(&w);
}

/* Builds a qwen3 GGUF, lets edit change it, expects the load to fail. */
static void expect_gguf_error(const gguf_options *o, void (*edit)(gguf_writer *), lms_status status,
                              const char *needle)
{
    scratch s;
    scratch_init(&s);
    geometry g = tiny(LMS_ARCH_QWEN3);
    gguf_writer w;
    build_gguf(&w, &g, o);
    if (edit) edit(&w);
    write_gguf(&w, s.path);
    expect_load_error(s.path, status, needle);
    gw_free(&w);
    scratch_free(&s);
}

static void drop_ffn_up(gguf_writer *w)
{
    drop_gguf_tensor(w, "blk.1.ffn_up.weight");
}

static void drop_q_norm(gguf_writer *w)
{
    drop_gguf_tensor(w, "blk.0.attn_q_norm.weight");
}

static void wrong_k_shape(gguf_writer *w)
{
    drop_gguf_tensor(w, "blk.0.attn_k.weight");
    add_gguf_weight(w, "blk.0.attn_k.weight", 96, 64, GGML_TYPE_F32);
}

static void iq4_nl_matrix(gguf_writer *w)
{
    drop_gguf_tensor(w, "blk.0.attn_v.weight");
    unsigned char blocks[64 * 2 * 18] = {0}; /* 64 rows of 64: 2 blocks of 18 bytes each */
    gw_tensor(w, "blk.0.attn_v.weight", 20 /* iq4_nl */, 2, (uint64_t[]){64, 64}, blocks,
              sizeof blocks);
}

static void extra_bias(gguf_writer *w)
{
    add_gguf_weight(w, "blk.0.attn_q.bias", 128, 1, GGML_TYPE_F32);
}

static void extra_layer(gguf_writer *w)
{
    add_gguf_weight(w, "blk.2.attn_norm.weight", 64, 1, GGML_TYPE_F32);
}

static void yarn_scaling(gguf_writer *w)
{
    mf_gguf_str(&w->meta, "qwen3.rope.scaling.type", "yarn");
}

static void wrong_vocab_size(gguf_writer *w)
{
    mf_gguf_u32(&w->meta, "qwen3.vocab_size", 51);
}

/* With the option that omits the key: */
static void odd_kv_heads(gguf_writer *w)
{
    mf_gguf_u32(&w->meta, "qwen3.attention.head_count_kv", 3);
}

static void huge_block_count(gguf_writer *w)
{
    mf_gguf_u32(&w->meta, "qwen3.block_count", 1000000000);
}

static void gpt2_arch(gguf_writer *w)
{
    /* A second general.architecture would be a duplicate key: rename
     * the first instead (same length keeps the encoding valid). */
    unsigned char *p = memmem(w->meta.kv.data, w->meta.kv.len, "qwen3", 5);
    assert_non_null(p);
    memcpy(p, "gpt2x", 5);
}

static void test_gguf_errors(void **state)
{
    (void)state;
    const gguf_options f32 = {GGML_TYPE_F32, false, NULL};
    expect_gguf_error(&f32, drop_ffn_up, LMS_ERR_FORMAT,
                      "tensor 'blk.1.ffn_up.weight' is missing (a qwen3 model needs it)");
    expect_gguf_error(&f32, drop_q_norm, LMS_ERR_FORMAT,
                      "tensor 'blk.0.attn_q_norm.weight' is missing");
    expect_gguf_error(&f32, wrong_k_shape, LMS_ERR_FORMAT,
                      "tensor 'blk.0.attn_k.weight' has shape [96, 64], expected [64, 64] "
                      "(n_kv_heads*head_dim, d_model)");
    expect_gguf_error(&f32, iq4_nl_matrix, LMS_ERR_UNSUPPORTED,
                      "tensor 'blk.0.attn_v.weight' is stored as iq4_nl");
    expect_gguf_error(&f32, extra_bias, LMS_ERR_UNSUPPORTED,
                      "GGUF tensor 'blk.0.attn_q.bias' is not part of a qwen3 model with 2 layers");
    expect_gguf_error(&f32, extra_layer, LMS_ERR_UNSUPPORTED,
                      "'blk.2.attn_norm.weight' is not part");
    expect_gguf_error(&f32, yarn_scaling, LMS_ERR_UNSUPPORTED, "'yarn' is not supported");
    expect_gguf_error(&f32, wrong_vocab_size, LMS_ERR_FORMAT,
                      "tensor 'token_embd.weight' has shape [50, 64], expected [51, 64]");
    expect_gguf_error(&(gguf_options){GGML_TYPE_F32, false, "attention.head_count_kv"},
                      odd_kv_heads, LMS_ERR_FORMAT,
                      "4 attention heads are not a multiple of 3 KV heads");
    expect_gguf_error(&(gguf_options){GGML_TYPE_F32, false, "block_count"}, huge_block_count,
                      LMS_ERR_FORMAT,
                      "1000000000 layers of qwen3 need at least 11000000000 tensors");
    expect_gguf_error(&f32, gpt2_arch, LMS_ERR_UNSUPPORTED,
                      "architecture 'gpt2x' is not supported");
    expect_gguf_error(&(gguf_options){GGML_TYPE_F32, false, "block_count"}, NULL, LMS_ERR_FORMAT,
                      "GGUF key 'qwen3.block_count' is missing");
    expect_gguf_error(&(gguf_options){GGML_TYPE_F32, false, "attention.key_length"}, NULL,
                      LMS_ERR_FORMAT,
                      "tensor 'blk.0.attn_q.weight' has shape [128, 64], expected [64, 64]");
}

/* ---- Hugging Face ---- */

static const char *hf_dtype(uint32_t ggml_type)
{
    return ggml_type == GGML_TYPE_F32 ? "F32" : ggml_type == GGML_TYPE_F16 ? "F16" : "BF16";
}

static void add_st_weight(st_writer *w, const char *name, const char *value_name, uint64_t rows,
                          uint64_t cols, uint32_t type)
{
    size_t n = (size_t)(rows * cols);
    float *v = weight_values(value_name, n);
    mf_buf data;
    encode(v, n, type, &data);
    sw_tensor(w, name, hf_dtype(type), cols > 1 ? 2 : 1, (uint64_t[]){rows, cols}, data.data,
              data.len);
    mf_buf_free(&data);
    free(v);
}

static void build_st(st_writer *w, const geometry *g, uint32_t type, bool with_lm_head)
{
    for (int l = -1; l < g->layers; l++) {
        for (size_t i = 0; i < N_DEFS; i++) {
            const weight_def *d = &defs[i];
            if (d->per_layer != (l >= 0) || !def_in_arch(d, g->arch)) continue;
            if (!with_lm_head && strcmp(d->gguf, "output.weight") == 0) continue;
            char name[128], value_name[128];
            full_name(name, sizeof name, false, d, l);
            full_name(value_name, sizeof value_name, true, d, l);
            add_st_weight(w, name, value_name, dim(g, d->rows), d->cols ? dim(g, d->cols) : 1,
                          type);
        }
    }
}

static const char *hf_class(lms_arch arch)
{
    return arch == LMS_ARCH_LLAMA   ? "LlamaForCausalLM"
           : arch == LMS_ARCH_QWEN2 ? "Qwen2ForCausalLM"
                                    : "Qwen3ForCausalLM";
}

/* config.json for g; `extra` ("" or ", \"key\": value...") is appended,
 * and json-c keeps the last of duplicate keys, so it can override. */
static void write_config(const char *dir, const geometry *g, bool tied, const char *extra)
{
    char json[2048], path[256];
    int n = snprintf(json, sizeof json,
                     "{\"architectures\": [\"%s\"], \"model_type\": \"%s\", \"hidden_size\": %d, "
                     "\"intermediate_size\": %d, \"num_hidden_layers\": %d, "
                     "\"num_attention_heads\": %d, \"num_key_value_heads\": %d, \"head_dim\": %d, "
                     "\"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000, "
                     "\"max_position_embeddings\": 256, \"vocab_size\": %d, "
                     "\"tie_word_embeddings\": %s, \"torch_dtype\": \"bfloat16\", "
                     "\"rope_scaling\": null%s}",
                     hf_class(g->arch), lms_arch_name(g->arch), g->d, g->ff, g->layers, g->heads,
                     g->kv_heads, g->head_dim, g->vocab, tied ? "true" : "false", extra);
    assert_true(n > 0 && (size_t)n < sizeof json);
    snprintf(path, sizeof path, "%s/config.json", dir);
    write_file(path, json, (size_t)n);
}

/* Writes the tensors as model.safetensors, or round-robin into n_shards
 * shards with model.safetensors.index.json. */
static void write_st(const char *dir, const st_writer *w, int n_shards)
{
    char path[256];
    mf_buf b;
    if (n_shards == 1) {
        sw_finish(w, &b);
        snprintf(path, sizeof path, "%s/model.safetensors", dir);
        write_file(path, b.data, b.len);
        mf_buf_free(&b);
        return;
    }
    const char *head = "{\"metadata\": {}, \"weight_map\": {";
    mf_buf index = {0};
    mf_buf_put(&index, head, strlen(head));
    for (int s = 0; s < n_shards; s++) {
        static st_writer shard;
        for (size_t i = (size_t)s; i < w->n; i += (size_t)n_shards) {
            const test_tensor *t = &w->tensors[i];
            sw_tensor(&shard, t->name, t->dtype, t->n_dims, t->dims, t->data.data, t->data.len);
            char entry[256];
            int n = snprintf(entry, sizeof entry, "%s\"%s\": \"model-%05d-of-%05d.safetensors\"",
                             index.len > strlen(head) ? ", " : "", t->name, s + 1, n_shards);
            mf_buf_put(&index, entry, (size_t)n);
        }
        sw_finish(&shard, &b);
        snprintf(path, sizeof path, "%s/model-%05d-of-%05d.safetensors", dir, s + 1, n_shards);
        write_file(path, b.data, b.len);
        mf_buf_free(&b);
        sw_free(&shard);
    }
    mf_buf_put(&index, "}}", 2);
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_file(path, index.data, index.len);
    mf_buf_free(&index);
}

/* Writes the weights to dir as n_shards safetensors files and a config.json
 * (tied embeddings or not, config_extra appended), then load_checked. */
static lms_model *write_hf_and_load(const char *dir, const st_writer *w, const geometry *g,
                                    int n_shards, bool tied, const char *config_extra)
{
    write_st(dir, w, n_shards);
    write_config(dir, g, tied, config_extra);
    return load_checked(dir, g);
}

static void test_hf_qwen3_bf16_single_file(void **state)
{
    const scratch *s = *state;
    geometry g = tiny(LMS_ARCH_QWEN3);
    static st_writer w;
    build_st(&w, &g, GGML_TYPE_BF16, true);
    lms_model *m = write_hf_and_load(s->dir, &w, &g, 1, false, "");
    assert_int_equal(m->cfg.format, LMS_FORMAT_HF);
    assert_string_equal(m->cfg.name, strrchr(s->dir, '/') + 1);
    assert_int_equal(m->cfg.rope_pairing, LMS_ROPE_NEOX);
    assert_true(m->cfg.rope_theta == 1e6f);
    assert_null(m->cfg.rope_freq_factors);
    assert_false(m->cfg.tied_embeddings);
    assert_null(m->gguf);
    assert_string_equal(m->hf_dir, s->dir);
    lms_model_free(m);
    sw_free(&w);
}

static void test_hf_qwen2_sharded_f16_tied(void **state)
{
    const scratch *s = *state;
    geometry g = tiny(LMS_ARCH_QWEN2);
    static st_writer w;
    build_st(&w, &g, GGML_TYPE_F16, false);
    lms_model *m = write_hf_and_load(s->dir, &w, &g, 3, true, "");
    assert_true(m->cfg.tied_embeddings);
    assert_ptr_equal(m->output.data, m->tok_embd.data);
    lms_model_free(m);
    sw_free(&w);
}

/* rope_freqs as llama.cpp's converter computes them, in double. */
static double llama3_factor(int i, int head_dim, double theta)
{
    const double factor = 8, low = 1, high = 4, original = 8192;
    double freq = 1.0 / pow(theta, 2.0 * i / head_dim);
    double wavelen = 2 * M_PI / freq;
    if (wavelen < original / high) return 1;
    if (wavelen > original / low) return factor;
    double smooth = (original / wavelen - low) / (high - low);
    return 1 / ((1 - smooth) / factor + smooth);
}

static void test_hf_llama_llama3_rope_f32_in_place(void **state)
{
    const scratch *s = *state;
    geometry g = tiny(LMS_ARCH_LLAMA);
    g.head_dim = 64; /* enough frequencies to reach all three llama3 bands */
    g.heads = 1;
    g.kv_heads = 1;
    static st_writer w;
    build_st(&w, &g, GGML_TYPE_F32, true);
    add_st_weight(&w, "model.layers.0.self_attn.rotary_emb.inv_freq", "inv_freq", 32, 1,
                  GGML_TYPE_F32);
    size_t before = lms_alloc_current_bytes();
    lms_model *m = write_hf_and_load(
        s->dir, &w, &g, 1, false,
        ", \"rope_theta\": 500000.0, \"rope_scaling\": {\"rope_type\": \"llama3\", "
        "\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
        "\"original_max_position_embeddings\": 8192}");
    assert_int_equal(m->cfg.rope_pairing, LMS_ROPE_NEOX);
    /* Only the 32 frequency factors were allocated: f32 stays in place. */
    assert_int_equal(lms_alloc_current_bytes() - before, 32 * sizeof(float));
    bool saw[3] = {false, false, false};
    for (int i = 0; i < 32; i++) {
        double want = llama3_factor(i, 64, 500000.0);
        assert_true(fabs(m->cfg.rope_freq_factors[i] - want) <= 1e-5 * want);
        saw[want == 1 ? 0 : want == 8 ? 2 : 1] = true;
    }
    assert_true(saw[0] && saw[1] && saw[2]);
    lms_model_free(m);
    sw_free(&w);
}

/* Writes a valid tiny qwen3 HF directory, applies edit, expects failure. */
static void expect_hf_error(const char *config_extra, void (*edit)(const char *dir, st_writer *),
                            lms_status status, const char *needle)
{
    scratch s;
    scratch_init(&s);
    geometry g = tiny(LMS_ARCH_QWEN3);
    static st_writer w;
    build_st(&w, &g, GGML_TYPE_F32, true);
    write_config(s.dir, &g, false, config_extra);
    if (edit)
        edit(s.dir, &w);
    else
        write_st(s.dir, &w, 1);
    expect_load_error(s.dir, status, needle);
    sw_free(&w);
    scratch_free(&s);
}

static void f64_weight(const char *dir, st_writer *w)
{
    double v[64] = {0};
    for (size_t i = 0; i < w->n; i++)
        if (strcmp(w->tensors[i].name, "model.norm.weight") == 0) {
            w->tensors[i].dtype = "F64";
            mf_buf_free(&w->tensors[i].data);
            mf_buf_put(&w->tensors[i].data, v, sizeof v);
        }
    write_st(dir, w, 1);
}

static void no_weights(const char *dir, st_writer *w)
{
    (void)dir;
    (void)w;
}

static void write_index(const char *dir, const char *json)
{
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
    write_file(path, json, strlen(json));
}

static void index_names_wrong_shard(const char *dir, st_writer *w)
{
    write_st(dir, w, 2);
    /* write_st put tensor i in shard i % 2 + 1: norm (1) in 2, lm_head (2) in 1. */
    write_index(dir,
                "{\"weight_map\": {\"model.norm.weight\": \"model-00001-of-00002.safetensors\","
                " \"lm_head.weight\": \"model-00002-of-00002.safetensors\"}}");
}

static void index_escapes_dir(const char *dir, st_writer *w)
{
    write_st(dir, w, 1);
    write_index(dir, "{\"weight_map\": {\"model.norm.weight\": \"../model.safetensors\"}}");
}

static void index_without_map(const char *dir, st_writer *w)
{
    write_st(dir, w, 1);
    write_index(dir, "{\"metadata\": {}}");
}

static void test_hf_errors(void **state)
{
    (void)state;
    expect_hf_error(", \"hidden_size\": null", NULL, LMS_ERR_FORMAT,
                    "config.json: \"hidden_size\" is missing");
    expect_hf_error(", \"hidden_size\": 64.5", NULL, LMS_ERR_FORMAT,
                    "config.json: \"hidden_size\" is not an integer");
    expect_hf_error(", \"num_hidden_layers\": -2", NULL, LMS_ERR_FORMAT,
                    "num_hidden_layers = -2 is outside 1..");
    expect_hf_error(", \"architectures\": [\"MistralForCausalLM\"], \"model_type\": \"mistral\"",
                    NULL, LMS_ERR_UNSUPPORTED,
                    "MistralForCausalLM / model_type mistral is not supported");
    expect_hf_error(", \"model_type\": \"llama\"", NULL, LMS_ERR_UNSUPPORTED,
                    "Qwen3ForCausalLM / model_type llama is not supported");
    expect_hf_error(", \"rope_scaling\": {\"rope_type\": \"dynamic\", \"factor\": 2.0}", NULL,
                    LMS_ERR_UNSUPPORTED, "rope_scaling type \"dynamic\" is not supported");
    expect_hf_error(", \"rope_scaling\": {\"type\": \"linear\"}", NULL, LMS_ERR_FORMAT,
                    "linear rope_scaling has no \"factor\"");
    expect_hf_error(", \"tie_word_embeddings\": 1", NULL, LMS_ERR_FORMAT,
                    "\"tie_word_embeddings\" is not a boolean");
    expect_hf_error(", \"vocab_size\": 49", NULL, LMS_ERR_FORMAT,
                    "tensor 'model.embed_tokens.weight' has shape [50, 64], expected [49, 64]");
    expect_hf_error(",,", NULL, LMS_ERR_FORMAT, "config.json");
    expect_hf_error("", f64_weight, LMS_ERR_UNSUPPORTED,
                    "tensor 'model.norm.weight' is stored as F64");
    expect_hf_error("", no_weights, LMS_ERR_IO, "model.safetensors: No such file");
    expect_hf_error(
        "", index_names_wrong_shard, LMS_ERR_FORMAT,
        "weight_map puts tensor 'model.norm.weight' in model-00001-of-00002.safetensors "
        "but it is in model-00002-of-00002.safetensors");
    expect_hf_error("", index_escapes_dir, LMS_ERR_FORMAT,
                    "weight_map[\"model.norm.weight\"] is not a file name in the model directory");
    expect_hf_error("", index_without_map, LMS_ERR_FORMAT, "no \"weight_map\" object");
}

static void test_missing_paths(void **state)
{
    const scratch *s = *state;
    expect_load_error("/nonexistent/model.gguf", LMS_ERR_IO, "/nonexistent/model.gguf");
    expect_load_error(s->dir, LMS_ERR_IO, "config.json: No such file");
    assert_string_equal(lms_arch_name(LMS_ARCH_QWEN2), "qwen2");
}

/* ---- the checkpoints lmscore-make-model writes (cmake --target models) ---- */

/* Row r of a llama Q or K matrix in Hugging Face order sits at this row of
 * the GGUF: llama.cpp's converter reorders each head's rows so that the
 * halves rotated together become adjacent pairs. */
static size_t gguf_llama_row(size_t r, int head_dim)
{
    size_t hd = (size_t)head_dim, head = r / hd, j = r % hd, half = hd / 2;
    return head * hd + 2 * (j % half) + j / half;
}

/* A GGUF and an HF checkpoint of the same model: same geometry, same
 * weights bit for bit. */
static void compare_formats(const lms_model *g, const lms_model *h)
{
    const lms_model_config *a = &g->cfg, *b = &h->cfg;
    assert_int_equal(a->arch, b->arch);
    assert_int_equal(a->n_layers, b->n_layers);
    assert_int_equal(a->d_model, b->d_model);
    assert_int_equal(a->n_heads, b->n_heads);
    assert_int_equal(a->n_kv_heads, b->n_kv_heads);
    assert_int_equal(a->head_dim, b->head_dim);
    assert_int_equal(a->d_ff, b->d_ff);
    assert_int_equal(a->vocab_size, b->vocab_size);
    assert_int_equal(a->context_length, b->context_length);
    assert_true(a->rms_eps == b->rms_eps);
    assert_true(a->rope_theta == b->rope_theta);
    assert_true(a->rope_scale_linear == b->rope_scale_linear);
    assert_int_equal(a->tied_embeddings, b->tied_embeddings);
    assert_int_equal(a->rope_pairing, a->arch == LMS_ARCH_LLAMA ? LMS_ROPE_NORM : LMS_ROPE_NEOX);
    assert_int_equal(b->rope_pairing, LMS_ROPE_NEOX);
    assert_int_equal(a->rope_freq_factors == NULL, b->rope_freq_factors == NULL);
    for (int i = 0; a->rope_freq_factors && i < a->head_dim / 2; i++)
        assert_true(fabsf(a->rope_freq_factors[i] - b->rope_freq_factors[i]) <=
                    1e-6f * fabsf(b->rope_freq_factors[i]));
    geometry geo = {a->arch,       a->n_layers, a->d_model, a->n_heads,
                    a->n_kv_heads, a->head_dim, a->d_ff,    a->vocab_size};
    for (int l = -1; l < geo.layers; l++) {
        for (size_t i = 0; i < N_DEFS; i++) {
            const weight_def *d = &defs[i];
            if (d->per_layer != (l >= 0) || !def_in_arch(d, geo.arch)) continue;
            float *owned_g, *owned_h;
            const float *wg = model_weight(g, d, l, &owned_g),
                        *wh = model_weight(h, d, l, &owned_h);
            size_t rows = (size_t)dim(&geo, d->rows),
                   cols = d->cols ? (size_t)dim(&geo, d->cols) : 1;
            bool permuted = geo.arch == LMS_ARCH_LLAMA && d->rows != DIM_D &&
                            (d->field == offsetof(lms_layer_weights, wq) ||
                             d->field == offsetof(lms_layer_weights, wk));
            for (size_t r = 0; r < rows; r++) {
                size_t rg = permuted ? gguf_llama_row(r, geo.head_dim) : r;
                if (memcmp(wg + rg * cols, wh + r * cols, cols * sizeof(float)) != 0)
                    fail_msg("layer %d %s row %zu differs between GGUF and HF", l, d->gguf, r);
            }
            free(owned_g);
            free(owned_h);
        }
    }
}

static void test_maker_checkpoints_load_and_formats_agree(void **state)
{
    (void)state;
    const char *build = getenv("LMSCORE_BUILD_DIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/models", build ? build : ".");
    DIR *d = build ? opendir(dir) : NULL;
    if (!d) fixture_skip("no generated models: the models target has not run");
    int loaded = 0, compared = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t len = strlen(e->d_name);
        char path[768], twin[768];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (len > 3 && strcmp(e->d_name + len - 3, "-hf") == 0) {
            /* HF directories are compared from their GGUF twin when it exists. */
            snprintf(twin, sizeof twin, "%s/%.*s.gguf", dir, (int)(len - 3), e->d_name);
            if (stat(twin, &st) == 0) continue;
            lms_model_free(load_ok(path));
            loaded++;
            continue;
        }
        if (len < 6 || strcmp(e->d_name + len - 5, ".gguf") != 0) continue;
        /* The benchmark geometry (GBs once converted) is make bench's. */
        if (stat(path, &st) != 0 || st.st_size > (256 << 20)) continue;
        lms_model *g = load_ok(path);
        loaded++;
        snprintf(twin, sizeof twin, "%s/%.*s-hf", dir, (int)(len - 5), e->d_name);
        if (stat(twin, &st) == 0) {
            lms_model *h = load_ok(twin);
            compare_formats(g, h);
            lms_model_free(h);
            loaded++;
            compared++;
        }
        lms_model_free(g);
    }
    closedir(d);
    print_message("loaded %d maker checkpoints; %d GGUF/HF pairs agree\n", loaded, compared);
    assert_true(loaded > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        WITH_SCRATCH(test_gguf_qwen3_f32_used_in_place),
        WITH_SCRATCH(test_gguf_llama_converted_tied_with_rope_freqs),
        WITH_SCRATCH(test_gguf_qwen2_biases_and_linear_rope),
        WITH_SCRATCH(test_gguf_mixed_block_types),
        cmocka_unit_test(test_gguf_errors),
        WITH_SCRATCH(test_hf_qwen3_bf16_single_file),
        WITH_SCRATCH(test_hf_qwen2_sharded_f16_tied),
        WITH_SCRATCH(test_hf_llama_llama3_rope_f32_in_place),
        cmocka_unit_test(test_hf_errors),
        WITH_SCRATCH(test_missing_paths),
    };
    const struct CMUnitTest alone[] = {
        cmocka_unit_test(test_maker_checkpoints_load_and_formats_agree),
    };
    return fixture_run(argc, argv, tests, alone);
}
