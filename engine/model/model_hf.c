/*
 * model_hf.c — the Hugging Face front-end of lms_model_load: config.json
 * into lms_model_config (including llama3 rope scaling, turned into the
 * same per-frequency factors llama.cpp writes as rope_freqs.weight), and
 * model.safetensors — or the shards that model.safetensors.index.json
 * lists — as one tensor source under transformers' names
 * (model.layers.N.self_attn.q_proj.weight, ...).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <json-c/json.h>

#include "alloc.h"
#include "model_bind.h"
#include "model_formats.h"
#include "name_index.h"

static const char *const hf_global_names[LMS_GLOBAL_COUNT] = {
    [LMS_GLOBAL_TOK_EMBD] = "model.embed_tokens.weight",
    [LMS_GLOBAL_OUTPUT_NORM] = "model.norm.weight",
    [LMS_GLOBAL_OUTPUT] = "lm_head.weight",
    [LMS_GLOBAL_ROPE_FREQS] = NULL, /* computed from config.json instead */
};

static const char *const hf_layer_names[LMS_LAYER_COUNT] = {
    [LMS_LAYER_ATTN_NORM] = "input_layernorm.weight",
    [LMS_LAYER_Q] = "self_attn.q_proj.weight",
    [LMS_LAYER_K] = "self_attn.k_proj.weight",
    [LMS_LAYER_V] = "self_attn.v_proj.weight",
    [LMS_LAYER_Q_BIAS] = "self_attn.q_proj.bias",
    [LMS_LAYER_K_BIAS] = "self_attn.k_proj.bias",
    [LMS_LAYER_V_BIAS] = "self_attn.v_proj.bias",
    [LMS_LAYER_Q_NORM] = "self_attn.q_norm.weight",
    [LMS_LAYER_K_NORM] = "self_attn.k_norm.weight",
    [LMS_LAYER_O] = "self_attn.o_proj.weight",
    [LMS_LAYER_FFN_NORM] = "post_attention_layernorm.weight",
    [LMS_LAYER_GATE] = "mlp.gate_proj.weight",
    [LMS_LAYER_UP] = "mlp.up_proj.weight",
    [LMS_LAYER_DOWN] = "mlp.down_proj.weight",
};

#define HF_SINGLE_FILE "model.safetensors"
#define HF_INDEX_FILE  "model.safetensors.index.json"
/* Older checkpoints store the RoPE inverse frequencies as a buffer; they are
 * a function of the config, not weights. */
#define HF_IGNORED_SUFFIX ".rotary_emb.inv_freq"

/* ---- config.json ---- */

static json_object *config_value(json_object *cfg, const char *key)
{
    json_object *v;
    return json_object_object_get_ex(cfg, key, &v) ? v : NULL; /* JSON null reads as absent */
}

static lms_status config_int(json_object *cfg, const char *key, bool required, int64_t fallback,
                             int64_t *out, lms_error *err)
{
    json_object *v = config_value(cfg, key);
    if (!v) {
        if (required)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "config.json: \"%s\" is missing", key);
        *out = fallback;
        return LMS_OK;
    }
    if (!json_object_is_type(v, json_type_int))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "config.json: \"%s\" is not an integer",
                        key);
    *out = json_object_get_int64(v);
    return LMS_OK;
}

static lms_status config_dim(json_object *cfg, const char *key, bool required, int64_t fallback,
                             int32_t *dst, lms_error *err)
{
    int64_t v = 0;
    lms_status st = config_int(cfg, key, required, fallback, &v, err);
    return st == LMS_OK ? lms_model_set_dim(dst, key, v, err) : st;
}

static lms_status config_number(json_object *cfg, const char *key, double fallback, double *out,
                                lms_error *err)
{
    json_object *v = config_value(cfg, key);
    if (!v) {
        *out = fallback;
        return LMS_OK;
    }
    if (!json_object_is_type(v, json_type_double) && !json_object_is_type(v, json_type_int))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "config.json: \"%s\" is not a number",
                        key);
    *out = json_object_get_double(v);
    return LMS_OK;
}

static lms_status config_float(json_object *cfg, const char *key, double fallback, float *out,
                               lms_error *err)
{
    double v = 0;
    lms_status st = config_number(cfg, key, fallback, &v, err);
    if (st == LMS_OK) *out = (float)v;
    return st;
}

static lms_status read_arch(json_object *cfg, lms_arch *arch, lms_error *err)
{
    static const struct {
        const char *class_name, *model_type;
        lms_arch arch;
    } known[] = {
        {"LlamaForCausalLM", "llama", LMS_ARCH_LLAMA},
        {"Qwen2ForCausalLM", "qwen2", LMS_ARCH_QWEN2},
        {"Qwen3ForCausalLM", "qwen3", LMS_ARCH_QWEN3},
    };
    json_object *archs = config_value(cfg, "architectures");
    json_object *type = config_value(cfg, "model_type");
    const char *class_name = NULL, *model_type = NULL;
    if (archs) {
        json_object *first = json_object_array_get_idx(archs, 0);
        if (!json_object_is_type(archs, json_type_array) ||
            !json_object_is_type(first, json_type_string))
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "config.json: \"architectures\" is not a list of class names");
        class_name = json_object_get_string(first);
    }
    if (type) {
        if (!json_object_is_type(type, json_type_string))
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "config.json: \"model_type\" is not a string");
        model_type = json_object_get_string(type);
    }
    if (!class_name && !model_type)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: neither \"architectures\" nor \"model_type\" is given");
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
        bool class_ok = !class_name || strcmp(class_name, known[i].class_name) == 0;
        bool type_ok = !model_type || strcmp(model_type, known[i].model_type) == 0;
        if (class_ok && type_ok) {
            *arch = known[i].arch;
            return LMS_OK;
        }
    }
    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                    "config.json: architecture %.64s / model_type %.64s is not supported "
                    "(LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM)",
                    class_name ? class_name : "-", model_type ? model_type : "-");
}

/* Llama 3.1's scaling as llama.cpp's converter computes rope_freqs.weight:
 * per rotary frequency, 1 for short wavelengths, `factor` for long ones and
 * a smooth blend between, in f32 like the converter's torch code. */
static lms_status llama3_freq_factors(lms_model *model, json_object *scaling, lms_error *err)
{
    const lms_model_config *c = &model->cfg;
    double factor = 0, low_freq_factor = 0, high_freq_factor = 0, original_context = 0;
    lms_status st = config_number(scaling, "factor", 8.0, &factor, err);
    if (st == LMS_OK) st = config_number(scaling, "low_freq_factor", 1.0, &low_freq_factor, err);
    if (st == LMS_OK) st = config_number(scaling, "high_freq_factor", 4.0, &high_freq_factor, err);
    if (st == LMS_OK)
        st = config_number(scaling, "original_max_position_embeddings", 8192.0, &original_context,
                           err);
    if (st != LMS_OK) return st;
    if (!(factor > 0) || !(low_freq_factor > 0) || !(original_context > 0) ||
        !(high_freq_factor > low_freq_factor))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: llama3 rope_scaling needs factor > 0 and "
                        "high_freq_factor > low_freq_factor > 0");
    const int n = c->head_dim / 2;
    float *factors = lms_alloc((size_t)n * sizeof *factors);
    if (!factors) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "rope frequency factors");
    const float low_wavelen = (float)(original_context / low_freq_factor);
    const float high_wavelen = (float)(original_context / high_freq_factor);
    for (int i = 0; i < n; i++) {
        const float freq = 1.0f / powf(c->rope_theta, (float)(2 * i) / (float)c->head_dim);
        const float wavelen = 2.0f * (float)M_PI / freq;
        if (wavelen < high_wavelen) {
            factors[i] = 1.0f;
        } else if (wavelen > low_wavelen) {
            factors[i] = (float)factor;
        } else {
            const float smooth = ((float)original_context / wavelen - (float)low_freq_factor) /
                                 (float)(high_freq_factor - low_freq_factor);
            factors[i] = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
        }
    }
    model->cfg.rope_freq_factors = factors;
    return lms_model_keep(model, factors, err);
}

static lms_status read_rope_scaling(lms_model *model, json_object *cfg, lms_error *err)
{
    json_object *scaling = config_value(cfg, "rope_scaling");
    if (!scaling) return LMS_OK;
    if (!json_object_is_type(scaling, json_type_object))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: \"rope_scaling\" is not an object");
    json_object *type = config_value(scaling, "rope_type");
    if (!type) type = config_value(scaling, "type");
    if (!json_object_is_type(type, json_type_string))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: rope_scaling has no \"rope_type\" string");
    const char *name = json_object_get_string(type);
    if (strcmp(name, "default") == 0) return LMS_OK;
    if (strcmp(name, "linear") == 0) {
        double factor = NAN;
        lms_status st = config_number(scaling, "factor", NAN, &factor, err);
        if (st == LMS_OK && isnan(factor))
            st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                          "config.json: linear rope_scaling has no \"factor\"");
        if (st == LMS_OK) model->cfg.rope_scale_linear = (float)factor;
        return st;
    }
    if (strcmp(name, "llama3") == 0) return llama3_freq_factors(model, scaling, err);
    return lms_fail(
        err, LMS_ERR_UNSUPPORTED, NULL, NULL,
        "config.json: rope_scaling type \"%.32s\" is not supported (linear, llama3 are)", name);
}

static lms_status read_config(lms_model *model, json_object *cfg, lms_error *err)
{
    lms_model_config *c = &model->cfg;
    if (!json_object_is_type(cfg, json_type_object))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "config.json is not a JSON object");
    lms_status st = read_arch(cfg, &c->arch, err);
    if (st != LMS_OK) return st;
    c->format = LMS_FORMAT_HF;
    c->rope_pairing = LMS_ROPE_NEOX; /* transformers' rotate_half, every family */
    if ((st = config_dim(cfg, "hidden_size", true, 0, &c->d_model, err)) != LMS_OK ||
        (st = config_dim(cfg, "intermediate_size", true, 0, &c->d_ff, err)) != LMS_OK ||
        (st = config_dim(cfg, "num_hidden_layers", true, 0, &c->n_layers, err)) != LMS_OK ||
        (st = config_dim(cfg, "num_attention_heads", true, 0, &c->n_heads, err)) != LMS_OK ||
        (st = config_dim(cfg, "max_position_embeddings", true, 0, &c->context_length, err)) !=
            LMS_OK ||
        (st = config_dim(cfg, "num_key_value_heads", false, c->n_heads, &c->n_kv_heads, err)) !=
            LMS_OK)
        return st;
    if (!config_value(cfg, "head_dim") && c->d_model % c->n_heads != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: hidden_size %d is not a multiple of num_attention_heads %d "
                        "and head_dim is absent",
                        c->d_model, c->n_heads);
    if ((st = config_dim(cfg, "head_dim", false, c->d_model / c->n_heads, &c->head_dim, err)) !=
        LMS_OK)
        return st;
    if (config_value(cfg, "vocab_size") &&
        (st = config_dim(cfg, "vocab_size", true, 0, &c->vocab_size, err)) != LMS_OK)
        return st;
    if ((st = config_float(cfg, "rms_norm_eps", 1e-6, &c->rms_eps, err)) != LMS_OK ||
        (st = config_float(cfg, "rope_theta", 10000.0, &c->rope_theta, err)) != LMS_OK)
        return st;
    json_object *tie = config_value(cfg, "tie_word_embeddings");
    if (tie && !json_object_is_type(tie, json_type_boolean))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "config.json: \"tie_word_embeddings\" is not a boolean");
    c->tied_embeddings = tie && json_object_get_boolean(tie);
    if (c->head_dim % 2 != 0)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "config.json: head_dim %d is odd",
                        c->head_dim);
    return read_rope_scaling(model, cfg, err);
}

static lms_status read_json_file(const char *path, json_object **out, lms_error *err)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: %s", path, strerror(errno));
    if (!S_ISREG(st.st_mode))
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: not a regular file", path);
    *out = json_object_from_file(path);
    if (!*out)
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "%s: %s", path, json_util_get_last_err());
    return LMS_OK;
}

/* ---- the safetensors files ---- */

typedef struct {
    uint32_t shard;
    size_t tensor;
} tensor_ref;

/* All shards' tensors as one numbered set. */
typedef struct {
    safetensors_file *const *shards;
    tensor_ref *refs;
    size_t n;
    name_index index;
} hf_tensors;

static const safetensors_tensor *hf_tensor(const hf_tensors *t, size_t i)
{
    return safetensors_tensor_at(t->shards[t->refs[i].shard], t->refs[i].tensor);
}

static bool hf_source_find(const void *ctx, const char *name, size_t *index)
{
    const hf_tensors *t = ctx;
    return name_index_find(&t->index, name, strlen(name), index);
}

static void hf_source_describe(const void *ctx, size_t index, lms_stored_tensor *out)
{
    const safetensors_tensor *t = hf_tensor(ctx, index);
    *out = (lms_stored_tensor){.name = t->name,
                               .name_len = strlen(t->name),
                               .convertible = true,
                               .type_name = t->dtype_name,
                               .n_dims = t->n_dims,
                               .data = t->data};
    memcpy(out->dims, t->shape, sizeof t->shape);
    switch (t->dtype) {
    case SAFETENSORS_F32:
        out->dtype = LMS_DTYPE_F32;
        break;
    case SAFETENSORS_F16:
        out->dtype = LMS_DTYPE_F16;
        break;
    case SAFETENSORS_BF16:
        out->dtype = LMS_DTYPE_BF16;
        break;
    default:
        out->convertible = false;
    }
}

static bool ignored_tensor(const char *name)
{
    size_t len = strlen(name), suffix = strlen(HF_IGNORED_SUFFIX);
    return len >= suffix && strcmp(name + len - suffix, HF_IGNORED_SUFFIX) == 0;
}

static lms_status index_tensors(const struct lms_model_storage *s, hf_tensors *t, lms_error *err)
{
    t->shards = s->shards;
    size_t total = 0;
    for (size_t i = 0; i < s->n_shards; i++)
        total += safetensors_tensor_count(s->shards[i]);
    t->refs = calloc(total ? total : 1, sizeof *t->refs);
    if (!t->refs) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%zu tensor references", total);
    for (size_t i = 0; i < s->n_shards; i++) {
        for (size_t j = 0; j < safetensors_tensor_count(s->shards[i]); j++) {
            if (ignored_tensor(safetensors_tensor_at(s->shards[i], j)->name)) continue;
            t->refs[t->n++] = (tensor_ref){(uint32_t)i, j};
        }
    }
    if (!name_index_init(&t->index, t->n))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "%zu tensor names", t->n);
    for (size_t i = 0; i < t->n; i++) {
        const char *name = hf_tensor(t, i)->name;
        name_index_set(&t->index, i, name, strlen(name));
    }
    size_t dup;
    if (!name_index_sort(&t->index, &dup))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "tensor '%.100s' is stored in two shards",
                        hf_tensor(t, dup)->name);
    return LMS_OK;
}

static lms_status open_shard(lms_model *model, const char *dir, const char *file, lms_error *err)
{
    struct lms_model_storage *s = model->storage;
    safetensors_file **grown = realloc(s->shards, (s->n_shards + 1) * sizeof *grown);
    if (!grown) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "shard list");
    s->shards = grown;
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, file) >= sizeof path)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s/%s: path too long", dir, file);
    lms_status st = safetensors_open(path, &s->shards[s->n_shards], err);
    if (st == LMS_OK) s->n_shards++;
    return st;
}

/* A shard name from the index must name a file in the model directory. */
static bool plain_file_name(const char *name)
{
    return name[0] != '\0' && name[0] != '.' && !strchr(name, '/') && strlen(name) < 256;
}

static int compare_strings(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The distinct shard files a weight_map names, sorted; views into the
 * index JSON. Shard k of the model's storage is files[k]. */
typedef struct {
    const char **files;
    size_t n;
} shard_list;

static lms_status list_shards(json_object *weight_map, shard_list *list, lms_error *err)
{
    size_t n = (size_t)json_object_object_length(weight_map);
    list->n = 0;
    list->files = calloc(n ? n : 1, sizeof *list->files);
    if (!list->files) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "shard names");
    json_object_object_foreach(weight_map, tensor, file)
    {
        if (!json_object_is_type(file, json_type_string) ||
            !plain_file_name(json_object_get_string(file)))
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "weight_map[\"%.100s\"] is not a file name in the model directory",
                            tensor);
        list->files[list->n++] = json_object_get_string(file);
    }
    qsort(list->files, list->n, sizeof *list->files, compare_strings);
    size_t unique = 0;
    for (size_t i = 0; i < list->n; i++)
        if (unique == 0 || strcmp(list->files[i], list->files[unique - 1]) != 0)
            list->files[unique++] = list->files[i];
    list->n = unique;
    return LMS_OK;
}

/* Every weight_map entry must be in the shard it names. */
static lms_status check_weight_map(const hf_tensors *t, json_object *weight_map,
                                   const shard_list *shards, lms_error *err)
{
    json_object_object_foreach(weight_map, tensor, file)
    {
        if (ignored_tensor(tensor)) continue;
        size_t i;
        if (!name_index_find(&t->index, tensor, strlen(tensor), &i))
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "weight_map lists tensor '%.100s' but no shard holds it", tensor);
        const char *holder = shards->files[t->refs[i].shard];
        if (strcmp(holder, json_object_get_string(file)) != 0)
            return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                            "weight_map puts tensor '%.100s' in %.100s but it is in %.100s", tensor,
                            json_object_get_string(file), holder);
    }
    return LMS_OK;
}

/* Opens model.safetensors, or every shard the index lists. */
static lms_status open_shards(lms_model *model, const char *dir, json_object **index,
                              shard_list *shards, lms_error *err)
{
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, HF_INDEX_FILE) >= sizeof path)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: path too long", dir);
    struct stat st_buf;
    if (stat(path, &st_buf) != 0) return open_shard(model, dir, HF_SINGLE_FILE, err);
    lms_status st = read_json_file(path, index, err);
    if (st != LMS_OK) return st;
    json_object *weight_map;
    if (!json_object_object_get_ex(*index, "weight_map", &weight_map) ||
        !json_object_is_type(weight_map, json_type_object))
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "%s: no \"weight_map\" object", path);
    if ((st = list_shards(weight_map, shards, err)) != LMS_OK) return st;
    for (size_t i = 0; i < shards->n && st == LMS_OK; i++)
        st = open_shard(model, dir, shards->files[i], err);
    return st;
}

static lms_status load_weights(lms_model *model, const char *dir, const lms_stop *stop,
                               lms_error *err)
{
    json_object *index = NULL;
    shard_list shards = {NULL, 0};
    hf_tensors tensors = {0};
    lms_status st = open_shards(model, dir, &index, &shards, err);
    if (st == LMS_OK) st = index_tensors(model->storage, &tensors, err);
    json_object *weight_map;
    if (st == LMS_OK && index && json_object_object_get_ex(index, "weight_map", &weight_map))
        st = check_weight_map(&tensors, weight_map, &shards, err);
    if (st == LMS_OK) {
        const lms_tensor_source src = {
            .format = "safetensors",
            .global_names = hf_global_names,
            .layer_prefix = "model.layers.",
            .layer_names = hf_layer_names,
            .n_tensors = tensors.n,
            .find = hf_source_find,
            .describe = hf_source_describe,
            .ctx = &tensors,
            .file_backed = true,
        };
        st = lms_model_bind(model, &src, stop, err);
    }
    json_object_put(index);
    free(shards.files);
    free(tensors.refs);
    name_index_free(&tensors.index);
    return st;
}

lms_status lms_model_load_hf(lms_model *model, const char *dir, const lms_stop *stop,
                             lms_error *err)
{
    model->hf_dir = strdup(dir);
    if (!model->hf_dir) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "model directory name");
    lms_model_set_name(model, NULL, 0, dir);
    char path[4096];
    if ((size_t)snprintf(path, sizeof path, "%s/config.json", dir) >= sizeof path)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: path too long", dir);
    json_object *cfg;
    lms_status st = read_json_file(path, &cfg, err);
    if (st != LMS_OK) return st;
    st = read_config(model, cfg, err);
    json_object_put(cfg);
    if (st != LMS_OK) {
        lms_fail_context(err, "%s", dir);
        return st;
    }
    st = load_weights(model, dir, stop, err);
    if (st != LMS_OK) lms_fail_context(err, "%s", dir);
    return st;
}
