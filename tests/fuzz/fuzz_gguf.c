/*
 * fuzz_gguf.c — libFuzzer target for the GGUF reader: parses the input with
 * gguf_open_memory and, when it is accepted, walks every metadata entry
 * through the getter of its type (and the others, which must refuse
 * cleanly) and touches the first and last byte of every tensor, so ASan
 * sees any offset the reader let through outside the input. Tensors of a
 * loadable type are converted to f32 as the loader converts them, reading
 * the bytes the type's geometry says they have: the reader's size and the
 * loader's must agree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gguf.h"
#include "tensor_convert.h"

/* Keeps reads of tensor bytes from being optimised away. */
static volatile unsigned char sink;

static void walk_value(const gguf_file *f, const char *key, gguf_value_type type)
{
    lms_error err;
    uint32_t u32;
    int64_t i64;
    float f32;
    bool flag;
    gguf_str s;
    gguf_get_u32(f, key, &u32, &err);
    gguf_get_i64(f, key, &i64, &err);
    gguf_get_f32(f, key, &f32, &err);
    gguf_get_bool(f, key, &flag, &err);
    if (gguf_get_str(f, key, &s, &err) == LMS_OK && s.len) sink ^= (unsigned char)s.ptr[s.len - 1];
    gguf_value_type elem;
    uint64_t n;
    if (type != GGUF_TYPE_ARRAY || gguf_get_array_info(f, key, &elem, &n, &err) != LMS_OK) return;
    for (uint64_t i = 0; i <= n; i++) /* one past the end must be refused */
        if (gguf_get_array_str(f, key, i, &s, &err) == LMS_OK && s.len)
            sink ^= (unsigned char)s.ptr[0] ^ (unsigned char)s.ptr[s.len - 1];
    const void *data;
    if (gguf_get_array_data(f, key, &data, &err) == LMS_OK && n)
        sink ^= ((const unsigned char *)data)[0];
}

/* Converts a tensor of a loadable type; its stored size must be what the
 * loader will read. */
static void convert(const gguf_tensor *t)
{
    lms_dtype type;
    if (!lms_dtype_of_ggml(t->type, &type)) return;
    const uint64_t blocks = t->n_elements / lms_dtype_block_elements(type);
    if (t->n_elements % lms_dtype_block_elements(type) != 0 ||
        blocks * lms_dtype_block_bytes(type) != t->n_bytes)
        __builtin_trap();
    float *out = malloc((size_t)t->n_elements * sizeof *out);
    if (!out) abort();
    const lms_convert_job job = {type, t->data, out, (size_t)t->n_elements};
    lms_error err;
    if (lms_convert_to_f32(&job, 1, NULL, &err) != LMS_OK) abort();
    sink ^= ((const unsigned char *)out)[0];
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gguf_file *f;
    lms_error err;
    if (gguf_open_memory(data, size, &f, &err) != LMS_OK) return 0;
    char name[256];
    for (uint64_t i = 0; i < gguf_kv_count(f); i++) {
        gguf_str key = gguf_kv_key(f, i);
        if (key.len >= sizeof name || memchr(key.ptr, '\0', key.len)) continue;
        memcpy(name, key.ptr, key.len);
        name[key.len] = '\0';
        if (!gguf_has_key(f, name)) __builtin_trap(); /* every listed key is found */
        walk_value(f, name, gguf_kv_type(f, i));
    }
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const gguf_tensor *t = gguf_tensor_at(f, i);
        const unsigned char *bytes = t->data;
        sink ^= bytes[0] ^ bytes[t->n_bytes - 1];
        convert(t);
        if (t->name.len >= sizeof name || memchr(t->name.ptr, '\0', t->name.len)) continue;
        memcpy(name, t->name.ptr, t->name.len);
        name[t->name.len] = '\0';
        if (gguf_find_tensor(f, name) != t) __builtin_trap(); /* names are unique */
        gguf_ggml_type_name(t->type);
    }
    gguf_close(f);
    return 0;
}
