/*
 * hf_write.c — the Hugging Face directory writer (see mm_hf.h).
 *
 * Each .safetensors file: its head encoded by mf_safetensors with the
 * tensors sorted by name, then their data streamed in that order. Shards
 * split the tensors evenly by count, in model order (embedding, layers,
 * final norm, head); config.json and the shard index are written with
 * json-c as transformers writes them.
 */
#include "mm_hf.h"

#include <errno.h>
#include <json-c/json.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mf_safetensors.h"
#include "mm_out.h"
#include "mm_stream.h"

static const char *safetensors_dtype(mm_dtype dtype)
{
    switch (dtype) {
    case MM_DTYPE_F16:
        return "F16";
    case MM_DTYPE_BF16:
        return "BF16";
    default: /* the checkpoint dtype is never a block type */
        break;
    }
    return "F32";
}

static const char *torch_dtype(mm_dtype dtype)
{
    switch (dtype) {
    case MM_DTYPE_F16:
        return "float16";
    case MM_DTYPE_BF16:
        return "bfloat16";
    default:
        break;
    }
    return "float32";
}

/* Python's spelling of a float: integral values as "1000000.0", others in
 * the shortest form that reads back exactly ("1e-06"). */
static json_object *new_double(double v)
{
    char text[32];
    if (v == floor(v) && fabs(v) < 1e15) {
        snprintf(text, sizeof text, "%.1f", v);
    } else {
        for (int precision = 1; precision <= 17; precision++) {
            snprintf(text, sizeof text, "%.*g", precision, v);
            if (strtod(text, NULL) == v) break;
        }
    }
    return json_object_new_double_s(v, text);
}

static lms_status write_json(const char *path, json_object *obj, int flags, lms_error *err)
{
    if (!obj) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %s", path);
    size_t len = 0;
    const char *text = json_object_to_json_string_length(obj, flags, &len);
    if (!text) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %s", path);
    mm_out out;
    lms_status st = mm_out_open(&out, path, err);
    if (st != LMS_OK) return st;
    mm_out_write(&out, text, len);
    mm_out_write(&out, "\n", 1);
    return mm_out_commit(&out, err);
}

#define PRETTY (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED | JSON_C_TO_STRING_NOSLASHESCAPE)

static json_object *rope_scaling(const mm_spec *s)
{
    if (s->rope_scaling == MM_ROPE_SCALING_NONE) return NULL;
    json_object *r = json_object_new_object();
    json_object_object_add(r, "factor", new_double(s->rope_factor));
    if (s->rope_scaling == MM_ROPE_SCALING_LLAMA3) {
        json_object_object_add(r, "high_freq_factor", new_double(s->rope_high_freq_factor));
        json_object_object_add(r, "low_freq_factor", new_double(s->rope_low_freq_factor));
        json_object_object_add(r, "original_max_position_embeddings",
                               json_object_new_int(s->rope_original_context));
    }
    json_object_object_add(
        r, "rope_type",
        json_object_new_string(s->rope_scaling == MM_ROPE_SCALING_LLAMA3 ? "llama3" : "linear"));
    return r;
}

static json_object *config_json(const mm_spec *s, const mm_vocab *v)
{
    static const char *const class_names[] = {
        [MM_ARCH_LLAMA] = "LlamaForCausalLM",
        [MM_ARCH_QWEN2] = "Qwen2ForCausalLM",
        [MM_ARCH_QWEN3] = "Qwen3ForCausalLM",
    };
    json_object *c = json_object_new_object();
    json_object *architectures = json_object_new_array();
    json_object_array_add(architectures, json_object_new_string(class_names[s->arch]));
    json_object_object_add(c, "architectures", architectures);
    if (s->arch != MM_ARCH_QWEN2) /* qwen2's q/k/v bias is implied by the architecture */
        json_object_object_add(c, "attention_bias", json_object_new_boolean(0));
    json_object_object_add(c, "attention_dropout", new_double(0.0));
    if (v->bos_id >= 0) json_object_object_add(c, "bos_token_id", json_object_new_int(v->bos_id));
    if (v->eos_id >= 0) json_object_object_add(c, "eos_token_id", json_object_new_int(v->eos_id));
    json_object_object_add(c, "head_dim", json_object_new_int(s->head_dim));
    json_object_object_add(c, "hidden_act", json_object_new_string("silu"));
    json_object_object_add(c, "hidden_size", json_object_new_int(s->d_model));
    json_object_object_add(c, "initializer_range", new_double(0.02));
    json_object_object_add(c, "intermediate_size", json_object_new_int(s->d_ff));
    json_object_object_add(c, "max_position_embeddings", json_object_new_int(s->context_length));
    if (s->arch == MM_ARCH_LLAMA) json_object_object_add(c, "mlp_bias", json_object_new_boolean(0));
    json_object_object_add(c, "model_type", json_object_new_string(mm_arch_name(s->arch)));
    json_object_object_add(c, "num_attention_heads", json_object_new_int(s->n_heads));
    json_object_object_add(c, "num_hidden_layers", json_object_new_int(s->n_layers));
    json_object_object_add(c, "num_key_value_heads", json_object_new_int(s->n_kv_heads));
    json_object_object_add(c, "rms_norm_eps", new_double(s->rms_eps));
    json_object_object_add(c, "rope_scaling", rope_scaling(s));
    json_object_object_add(c, "rope_theta", new_double(s->rope_theta));
    json_object_object_add(c, "tie_word_embeddings", json_object_new_boolean(s->tied_embeddings));
    json_object_object_add(c, "torch_dtype",
                           json_object_new_string(torch_dtype(mm_spec_checkpoint_dtype(s))));
    json_object_object_add(c, "transformers_version", json_object_new_string("4.51.0"));
    json_object_object_add(c, "use_cache", json_object_new_boolean(1));
    if (s->arch != MM_ARCH_LLAMA)
        json_object_object_add(c, "use_sliding_window", json_object_new_boolean(0));
    json_object_object_add(c, "vocab_size", json_object_new_int(s->vocab_size));
    return c;
}

static int by_hf_name(const void *a, const void *b)
{
    return strcmp((*(const mm_tensor *const *)a)->hf_name, (*(const mm_tensor *const *)b)->hf_name);
}

/* One .safetensors file holding shard[0..n) (sorted here by name). */
static lms_status write_safetensors(const char *path, const mm_spec *spec, const mm_tensor **shard,
                                    size_t n, lms_error *err)
{
    const mm_dtype dtype = mm_spec_checkpoint_dtype(spec);
    qsort(shard, n, sizeof *shard, by_hf_name);
    mf_safetensor *heads = calloc(n ? n : 1, sizeof *heads);
    uint64_t(*shapes)[2] = calloc(n ? n : 1, sizeof *shapes);
    mf_buf head = {0};
    lms_status st = LMS_OK;
    if (heads && shapes) {
        for (size_t i = 0; i < n; i++) {
            const mm_tensor *t = shard[i];
            /* PyTorch order: [rows, cols], or [cols] for a vector */
            shapes[i][0] = t->n_dims == 2 ? (uint64_t)t->rows : (uint64_t)t->cols;
            shapes[i][1] = (uint64_t)t->cols;
            heads[i] = (mf_safetensor){t->hf_name, safetensors_dtype(dtype), (uint32_t)t->n_dims,
                                       shapes[i], mm_tensor_bytes(t, dtype)};
        }
        mf_safetensors_head(heads, n, &head);
    }
    if (!heads || !shapes || head.failed)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %s's header", path);
    mm_out out;
    if (st == LMS_OK) st = mm_out_open(&out, path, err);
    if (st == LMS_OK) {
        mm_out_write(&out, head.data, head.len);
        for (size_t i = 0; i < n && st == LMS_OK; i++)
            st = mm_stream_tensor(&out, spec, shard[i], dtype, MM_LAYOUT_HF, err);
        if (st == LMS_OK)
            st = mm_out_commit(&out, err);
        else
            mm_out_abort(&out);
    }
    mf_buf_free(&head);
    free(shapes);
    free(heads);
    return st;
}

static lms_status write_weights(const char *dir, const mm_spec *spec, const mm_tensor *tensors,
                                size_t n_tensors, lms_error *err)
{
    const mm_tensor **hf = calloc(n_tensors ? n_tensors : 1, sizeof *hf);
    if (!hf) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    size_t n = 0;
    for (size_t i = 0; i < n_tensors; i++)
        if (tensors[i].hf_name[0]) hf[n++] = &tensors[i];
    const size_t shards = (size_t)spec->hf_shards;
    lms_status st = LMS_OK;
    if (shards > n)
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "too_many_shards", "shards",
                      "%zu shards for %zu tensors", shards, n);
    json_object *weight_map = json_object_new_object();
    char path[4096], file[64];
    uint64_t total = 0;
    for (size_t k = 0, first = 0; k < shards && st == LMS_OK; k++) {
        const size_t end = (k + 1) * n / shards;
        if (shards == 1)
            snprintf(file, sizeof file, "model.safetensors");
        else
            snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", k + 1, shards);
        for (size_t i = first; i < end; i++) {
            json_object_object_add(weight_map, hf[i]->hf_name, json_object_new_string(file));
            total += mm_tensor_bytes(hf[i], mm_spec_checkpoint_dtype(spec));
        }
        snprintf(path, sizeof path, "%s/%s", dir, file);
        st = write_safetensors(path, spec, hf + first, end - first, err);
        first = end;
    }
    if (st == LMS_OK && shards > 1) {
        /* The index lists tensors sorted by name, as transformers writes it. */
        json_object *sorted = json_object_new_object();
        qsort(hf, n, sizeof *hf, by_hf_name);
        for (size_t i = 0; i < n; i++) {
            json_object *f = NULL;
            json_object_object_get_ex(weight_map, hf[i]->hf_name, &f);
            json_object_object_add(sorted, hf[i]->hf_name, json_object_get(f));
        }
        json_object *index = json_object_new_object();
        json_object *meta = json_object_new_object();
        json_object_object_add(meta, "total_size", json_object_new_uint64(total));
        json_object_object_add(index, "metadata", meta);
        json_object_object_add(index, "weight_map", sorted);
        snprintf(path, sizeof path, "%s/model.safetensors.index.json", dir);
        st = write_json(path, index, PRETTY, err);
        json_object_put(index);
    }
    json_object_put(weight_map);
    free(hf);
    return st;
}

static lms_status copy_file(const char *from_dir, const char *to_dir, const char *name,
                            lms_error *err)
{
    char from[4096], to[4096];
    snprintf(from, sizeof from, "%s/%s", from_dir, name);
    snprintf(to, sizeof to, "%s/%s", to_dir, name);
    FILE *in = fopen(from, "rb");
    if (!in)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "cannot open %s: %s", from, strerror(errno));
    mm_out out;
    lms_status st = mm_out_open(&out, to, err);
    if (st == LMS_OK) {
        char chunk[1 << 16];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
            mm_out_write(&out, chunk, n);
        if (ferror(in)) {
            mm_out_abort(&out);
            st = lms_fail(err, LMS_ERR_IO, NULL, NULL, "reading %s failed", from);
        } else {
            st = mm_out_commit(&out, err);
        }
    }
    fclose(in);
    return st;
}

lms_status mm_write_hf(const char *dir, const char *tokenizer_dir, const mm_spec *spec,
                       const mm_vocab *vocab, const mm_tensor *tensors, size_t n_tensors,
                       lms_error *err)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "cannot create %s: %s", dir, strerror(errno));
    /* A previous run with another shard count must not leave a second,
     * stale set of weights beside the new one. */
    char stale[4096];
    snprintf(stale, sizeof stale, "%s/%s", dir,
             spec->hf_shards == 1 ? "model.safetensors.index.json" : "model.safetensors");
    remove(stale);
    lms_status st = write_weights(dir, spec, tensors, n_tensors, err);
    if (st == LMS_OK) st = copy_file(tokenizer_dir, dir, "tokenizer.json", err);
    if (st == LMS_OK) st = copy_file(tokenizer_dir, dir, "tokenizer_config.json", err);
    if (st == LMS_OK) {
        char path[4096];
        snprintf(path, sizeof path, "%s/config.json", dir);
        json_object *config = config_json(spec, vocab);
        st = write_json(path, config, PRETTY, err);
        json_object_put(config);
    }
    return st;
}
