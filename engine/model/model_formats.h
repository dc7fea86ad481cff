/*
 * model_formats.h — the checkpoint format front-ends, for the dispatch in
 * model_load.c. Each fills model->cfg from its metadata (vocab_size may be
 * left 0: the embedding gives it), opens its files into model->gguf or
 * model->storage, then hands its tensors to lms_model_bind (model_bind.h).
 */
#ifndef LMS_MODEL_FORMATS_H
#define LMS_MODEL_FORMATS_H

#include "lmscore.h"
#include "model.h"

/* A GGUF file. */
lms_status lms_model_load_gguf(lms_model *model, const char *path, const lms_stop *stop,
                               lms_error *err);
/* A Hugging Face directory: config.json and model.safetensors, or the shards
 * model.safetensors.index.json lists. */
lms_status lms_model_load_hf(lms_model *model, const char *dir, const lms_stop *stop,
                             lms_error *err);

#endif
