/*
 * tokenizer.h — text <-> token ids, identical to the Hugging Face tokenizers.
 *
 * Two model families: byte-level BPE (GPT-2, Llama 3, Qwen2/Qwen3; the
 * pre-tokenizer regex runs through PCRE2) and SentencePiece-style BPE
 * (Llama 2: score-ordered merges, U+2581 for spaces, byte fallback).
 * Special and added tokens are matched in the text before BPE.
 * Loaded from GGUF metadata (tokenizer.ggml.*) or from tokenizer.json (+
 * tokenizer_config.json when present). A loaded tokenizer is immutable and
 * safe to use from many threads at once.
 */
#ifndef LMS_TOKENIZER_H
#define LMS_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "status.h"

struct gguf_file;
typedef struct lms_tokenizer lms_tokenizer;

lms_status lms_tokenizer_load_gguf(const struct gguf_file *f, lms_tokenizer **out, lms_error *err);
/* dir holds tokenizer.json and optionally tokenizer_config.json. */
lms_status lms_tokenizer_load_hf(const char *dir, lms_tokenizer **out, lms_error *err);
void lms_tokenizer_free(lms_tokenizer *tok);

int32_t lms_tokenizer_vocab_size(const lms_tokenizer *tok);
int32_t lms_tokenizer_bos_id(const lms_tokenizer *tok); /* -1 if none */
int32_t lms_tokenizer_eos_id(const lms_tokenizer *tok); /* -1 if none */

/* Encodes len bytes of text (any bytes: invalid UTF-8 has defined behaviour).
 * add_special adds what the model's template adds around a sequence (BOS
 * when the model adds one), as Hugging Face's add_special_tokens=True does.
 * *ids is allocated with malloc and owned by the caller. */
lms_status lms_tokenizer_encode(const lms_tokenizer *tok, const char *text, size_t len,
                                bool add_special, int32_t **ids, size_t *n_ids, lms_error *err);

/* Decodes ids to text (NUL-terminated, malloc'ed, owned by the caller).
 * skip_special drops special/control tokens. An id outside the vocabulary is
 * LMS_ERR_INVALID_ARGUMENT. */
lms_status lms_tokenizer_decode(const lms_tokenizer *tok, const int32_t *ids, size_t n_ids,
                                bool skip_special, char **text, size_t *len, lms_error *err);

/* The id of a text that is exactly one token when encoded without special
 * tokens (a special token's own text counts too); LMS_ERR_INVALID_ARGUMENT
 * with reason "label_not_single_token" otherwise. */
lms_status lms_tokenizer_single_token(const lms_tokenizer *tok, const char *text, size_t len,
                                      int32_t *id, lms_error *err);

#endif
