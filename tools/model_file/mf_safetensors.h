/*
 * mf_safetensors.h — encodes the head of a safetensors file: the JSON
 * header's length (u64, little-endian), then the header
 *
 *   {"__metadata__":{"format":"pt"},NAME:{"dtype":D,"shape":[..],"data_offsets":[B,E]},..}
 *
 * with the tensors in the order given, padded with spaces to a multiple of
 * 8 bytes, as the reference writer lays it out. The tensors' data follows
 * back to back in the same order; it is the caller's to write, so that it
 * can be streamed. Nothing checks dtypes or sizes: tests build malformed
 * files with it.
 */
#ifndef MF_SAFETENSORS_H
#define MF_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "mf_buf.h"

typedef struct {
    const char *name;
    const char *dtype; /* "F32", "F16", "BF16", ... */
    uint32_t n_dims;
    const uint64_t *shape; /* [n_dims], slowest-varying first */
    uint64_t n_bytes;
} mf_safetensor;

void mf_safetensors_head(const mf_safetensor *tensors, size_t n, mf_buf *out);

#endif
