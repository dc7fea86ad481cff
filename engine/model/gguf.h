/*
 * gguf.h — a validating reader for GGUF v3 files (the llama.cpp format).
 *
 * The file is mmapped read-only; metadata and tensor data are served as
 * pointers into the mapping, so nothing is copied. Every count, length, offset
 * and size read from the file is checked against the file's size before use:
 * a truncated or hostile file yields LMS_ERR_FORMAT with a message that says
 * what and where, never a crash and never an allocation larger than the file
 * justifies.
 *
 * Strings (keys, string values, array elements) are NOT NUL-terminated: they
 * are (pointer, length) views into the file.
 */
#ifndef LMS_GGUF_H
#define LMS_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

typedef enum {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
} gguf_value_type;

/* ggml tensor types this project reads (values as in ggml.h). */
typedef enum {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_BF16 = 30,
} ggml_type;

typedef struct {
    const char *ptr;
    size_t len;
} gguf_str;

typedef struct {
    gguf_str name;
    uint32_t n_dims;
    uint64_t ne[4];   /* ne[0] is the fastest-varying (row length) */
    uint32_t type;    /* a ggml_type; others are reported, not read */
    const void *data; /* into the mapping, aligned per general.alignment */
    uint64_t n_bytes;
    uint64_t n_elements;
} gguf_tensor;

typedef struct gguf_file gguf_file;

lms_status gguf_open(const char *path, gguf_file **out, lms_error *err);
/* Parses a caller-owned buffer (kept, not copied; it must outlive the handle).
 * Used by the fuzzer and the tests. */
lms_status gguf_open_memory(const void *data, size_t size, gguf_file **out, lms_error *err);
void gguf_close(gguf_file *f);

uint32_t gguf_version(const gguf_file *f);

/* Metadata. Each getter fails with LMS_ERR_FORMAT naming the key when the
 * key is missing or of a type that cannot represent the value exactly
 * (integers of any width are accepted when in range). */
bool gguf_has_key(const gguf_file *f, const char *key);
lms_status gguf_get_u32(const gguf_file *f, const char *key, uint32_t *out, lms_error *err);
lms_status gguf_get_i64(const gguf_file *f, const char *key, int64_t *out, lms_error *err);
lms_status gguf_get_f32(const gguf_file *f, const char *key, float *out, lms_error *err);
lms_status gguf_get_bool(const gguf_file *f, const char *key, bool *out, lms_error *err);
lms_status gguf_get_str(const gguf_file *f, const char *key, gguf_str *out, lms_error *err);

/* Arrays: element type and count, then random access. String elements are
 * indexed at open time so gguf_get_array_str is O(1). Numeric arrays are
 * returned as a pointer to the packed little-endian elements (may be
 * unaligned: copy with memcpy). */
lms_status gguf_get_array_info(const gguf_file *f, const char *key, gguf_value_type *elem_type,
                               uint64_t *n, lms_error *err);
lms_status gguf_get_array_str(const gguf_file *f, const char *key, uint64_t i, gguf_str *out,
                              lms_error *err);
lms_status gguf_get_array_data(const gguf_file *f, const char *key, const void **data,
                               lms_error *err);

/* Enumeration of the metadata, in file order (i < gguf_kv_count). */
uint64_t gguf_kv_count(const gguf_file *f);
gguf_str gguf_kv_key(const gguf_file *f, uint64_t i);
gguf_value_type gguf_kv_type(const gguf_file *f, uint64_t i);

/* Tensors. */
uint64_t gguf_tensor_count(const gguf_file *f);
const gguf_tensor *gguf_tensor_at(const gguf_file *f, uint64_t i);
const gguf_tensor *gguf_find_tensor(const gguf_file *f, const char *name); /* NULL if absent */

/* "f32", "q4_K", ... for any ggml type id; "unknown" for ids ggml never had. */
const char *gguf_ggml_type_name(uint32_t type);

#endif
