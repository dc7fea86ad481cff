/*
 * mm_vocab.h — a Hugging Face tokenizer (tokenizer.json +
 * tokenizer_config.json) turned into the tokenizer.ggml.* metadata that
 * llama.cpp's convert_hf_to_gguf.py writes for it.
 *
 * Byte-level BPE (GPT-2 / Llama 3 / Qwen) becomes tokenizer model "gpt2"
 * with merges; SentencePiece-style BPE with byte fallback (Llama 2) becomes
 * "llama" with scores. Ids the tokenizer does not define, up to the model's
 * vocab size (Qwen pads its embedding to 151,936 rows), become "[PAD<id>]"
 * tokens of type UNUSED, as the converter writes them.
 */
#ifndef MM_VOCAB_H
#define MM_VOCAB_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"

/* llama.cpp's llama_token_type values (tokenizer.ggml.token_type). */
enum {
    MM_TOKEN_NORMAL = 1,
    MM_TOKEN_UNKNOWN = 2,
    MM_TOKEN_CONTROL = 3,
    MM_TOKEN_USER_DEFINED = 4,
    MM_TOKEN_UNUSED = 5,
    MM_TOKEN_BYTE = 6,
};

typedef struct {
    const char *model; /* "gpt2" or "llama" */
    int32_t n_tokens;  /* the model's vocab size */
    int32_t n_defined; /* 1 + the largest id tokenizer.json defines */
    char **tokens;     /* [n_tokens] */
    int32_t *types;    /* [n_tokens] */
    float *scores;     /* [n_tokens] for "llama", NULL for "gpt2" */
    char **merges;     /* "left right", rank order; gpt2 only */
    int64_t n_merges;
    int32_t bos_id, eos_id, pad_id, unk_id; /* -1 when the tokenizer has none */
    bool add_bos, add_eos;
} mm_vocab;

/* Reads dir/tokenizer.json and dir/tokenizer_config.json. vocab_size is the
 * model's row count (0: exactly the tokenizer's ids); fallback_bos names the
 * BOS token when tokenizer_config.json has none (may be NULL or empty). */
lms_status mm_vocab_load(const char *dir, int32_t vocab_size, const char *fallback_bos,
                         mm_vocab **out, lms_error *err);
void mm_vocab_free(mm_vocab *vocab);

#endif
