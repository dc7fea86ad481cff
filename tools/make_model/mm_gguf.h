/*
 * mm_gguf.h — writes a model as a GGUF v3 file the way llama.cpp's
 * convert_hf_to_gguf.py does: its metadata keys, tokenizer.ggml.* from the
 * tokenizer, tensor names, ggml dimension order (ne[0] = in-features),
 * llama's permuted Q/K rows, norms and biases kept F32, 32-byte alignment.
 */
#ifndef MM_GGUF_H
#define MM_GGUF_H

#include <stddef.h>

#include "mm_spec.h"
#include "mm_tensors.h"
#include "mm_vocab.h"
#include "lmscore.h"

/* The type a tensor is stored in: F32 for norms, biases and rope factors;
 * F16 where a block type was asked for but a row is not whole blocks (as
 * llama.cpp's converter falls back for Q8_0); the requested dtype
 * otherwise. */
mm_dtype mm_gguf_tensor_type(const mm_spec *spec, const mm_tensor *t);

lms_status mm_write_gguf(const char *path, const mm_spec *spec, const mm_vocab *vocab,
                         const mm_tensor *tensors, size_t n_tensors, lms_error *err);

#endif
