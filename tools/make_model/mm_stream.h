/*
 * mm_stream.h — writes one tensor's data in a given storage type, generating
 * it in row chunks (in parallel) so no model needs to fit in memory.
 */
#ifndef MM_STREAM_H
#define MM_STREAM_H

#include <stdint.h>

#include "mm_out.h"
#include "mm_spec.h"
#include "mm_tensors.h"
#include "lmscore.h"

typedef enum {
    MM_LAYOUT_HF,   /* PyTorch row order */
    MM_LAYOUT_GGUF, /* llama's Q/K rows permuted as llama.cpp writes them */
} mm_layout;

/* Bytes of t stored as `type` (a block type needs whole blocks per row). */
uint64_t mm_tensor_bytes(const mm_tensor *t, mm_dtype type);

lms_status mm_stream_tensor(mm_out *out, const mm_spec *spec, const mm_tensor *t, mm_dtype type,
                            mm_layout layout, lms_error *err);

#endif
