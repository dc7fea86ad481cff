/*
 * safetensors.h — a validating reader for .safetensors files (Hugging Face).
 *
 * Layout: a u64 little-endian header length N, N bytes of JSON mapping each
 * tensor name to {"dtype", "shape", "data_offsets": [begin, end]} (offsets
 * relative to the data section that follows the header), plus an optional
 * "__metadata__" object of strings. The file is mmapped read-only and tensor
 * data is served in place. Every offset and size is checked against the file
 * (inside the data section, size = product(shape) × dtype size, no two
 * tensors overlapping): a bad file is LMS_ERR_FORMAT naming what is wrong.
 */
#ifndef LMS_SAFETENSORS_H
#define LMS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

#define SAFETENSORS_MAX_DIMS 8

typedef enum {
    SAFETENSORS_BOOL,
    SAFETENSORS_U8,
    SAFETENSORS_I8,
    SAFETENSORS_F8_E5M2,
    SAFETENSORS_F8_E4M3,
    SAFETENSORS_I16,
    SAFETENSORS_U16,
    SAFETENSORS_F16,
    SAFETENSORS_BF16,
    SAFETENSORS_I32,
    SAFETENSORS_U32,
    SAFETENSORS_F32,
    SAFETENSORS_F64,
    SAFETENSORS_I64,
    SAFETENSORS_U64,
} safetensors_dtype;

typedef struct {
    const char *name; /* NUL-terminated, owned by the file handle */
    safetensors_dtype dtype;
    const char *dtype_name; /* as the header spells it, e.g. "BF16" */
    uint32_t n_dims;
    uint64_t shape[SAFETENSORS_MAX_DIMS]; /* row-major: shape[n_dims-1] varies fastest */
    uint64_t n_elements;
    uint64_t n_bytes;
    const void *data; /* into the file; any alignment */
} safetensors_tensor;

typedef struct safetensors_file safetensors_file;

lms_status safetensors_open(const char *path, safetensors_file **out, lms_error *err);
/* Parses a caller-owned buffer (kept, not copied; it must outlive the
 * handle). Used by the fuzzer and the tests. */
lms_status safetensors_open_memory(const void *data, size_t size, safetensors_file **out,
                                   lms_error *err);
void safetensors_close(safetensors_file *f);

size_t safetensors_tensor_count(const safetensors_file *f);
const safetensors_tensor *safetensors_tensor_at(const safetensors_file *f, size_t i);
/* NULL if absent. */
const safetensors_tensor *safetensors_find_tensor(const safetensors_file *f, const char *name);

#endif
