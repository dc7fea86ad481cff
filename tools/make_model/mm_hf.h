/*
 * mm_hf.h — writes a model as a Hugging Face directory: config.json,
 * model.safetensors (or model-0000K-of-0000N.safetensors shards with
 * model.safetensors.index.json), and the tokenizer's tokenizer.json and
 * tokenizer_config.json copied byte for byte.
 */
#ifndef MM_HF_H
#define MM_HF_H

#include <stddef.h>

#include "mm_spec.h"
#include "mm_tensors.h"
#include "mm_vocab.h"
#include "lmscore.h"

lms_status mm_write_hf(const char *dir, const char *tokenizer_dir, const mm_spec *spec,
                       const mm_vocab *vocab, const mm_tensor *tensors, size_t n_tensors,
                       lms_error *err);

#endif
