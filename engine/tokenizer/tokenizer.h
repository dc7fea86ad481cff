/*
 * tokenizer.h — loading a tokenizer: from GGUF metadata (tokenizer.ggml.*) or
 * from tokenizer.json (+ tokenizer_config.json when present). Encoding and
 * decoding are public (lmscore.h); loading is the engine's business, since
 * the engine owns the tokenizer of the model it opens.
 *
 * Special and added tokens are matched in the text before BPE; byte-level
 * models run the pre-tokenizer regex through PCRE2. A loaded tokenizer is
 * immutable and safe to use from many threads at once.
 */
#ifndef LMS_TOKENIZER_H
#define LMS_TOKENIZER_H

#include "lmscore.h"

struct gguf_file;

lms_status lms_tokenizer_load_gguf(const struct gguf_file *f, lms_tokenizer **out, lms_error *err);
/* dir holds tokenizer.json and optionally tokenizer_config.json. */
lms_status lms_tokenizer_load_hf(const char *dir, lms_tokenizer **out, lms_error *err);
void lms_tokenizer_free(lms_tokenizer *tok);

#endif
