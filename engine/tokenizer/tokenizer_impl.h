/*
 * tokenizer_impl.h — the tokenizer's private state and the internal interface
 * between the files of engine/tokenizer/ (pipeline, construction, vocabulary,
 * text, pre-tokenizer, BPE and the two loaders). Nothing outside
 * engine/tokenizer/ includes it.
 *
 * The pipeline mirrors the reference (transformers.js, which reproduces the
 * Hugging Face tokenizers): invalid UTF-8 replaced, added tokens split out,
 * each remaining section normalized, pre-tokenized by regex, byte-mapped
 * (byte-level models), merged by BPE; then the template's special tokens.
 */
#ifndef LMS_TOKENIZER_IMPL_H
#define LMS_TOKENIZER_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "lmscore.h"
#include "tokenizer.h"

#define TOK_MAX_SPLITS      4 /* regex Split steps in a pre-tokenizer Sequence */
#define TOK_MAX_NORMALIZE   4 /* steps in a normalizer Sequence */
#define TOK_MAX_AFFIX       4 /* special tokens a template puts around a sequence */
#define TOK_NO_RANK         UINT32_MAX
#define TOK_SPIECE_MARK     "\xe2\x96\x81" /* U+2581, SentencePiece's space */
#define TOK_SPIECE_MARK_LEN 3

typedef enum {
    TOK_BYTE_LEVEL,    /* GPT-2 style: bytes mapped to printable code points */
    TOK_SENTENCEPIECE, /* U+2581 for spaces, <0xNN> byte fallback */
} tok_kind;

/* Per-id flags. */
enum {
    TOK_PRESENT = 1, /* the id has a token (vocabularies may have holes) */
    TOK_ADDED = 2,   /* an added token: matched in raw text, decoded verbatim */
    TOK_SPECIAL = 4, /* dropped by decode(skip_special) */
    TOK_BYTE = 8,    /* SentencePiece <0xNN>: decodes to one raw byte */
};

typedef enum { TOK_NORM_NFC, TOK_NORM_PREPEND, TOK_NORM_REPLACE } tok_norm_kind;

typedef struct {
    tok_norm_kind kind;
    char *from; /* REPLACE: the literal replaced */
    size_t from_len;
    char *to; /* PREPEND: the prefix; REPLACE: the replacement */
    size_t to_len;
} tok_norm_step;

typedef struct {
    int32_t id;
    uint32_t off, len; /* content in the arena */
    bool lstrip, rstrip;
} tok_added;

typedef struct {
    uint64_t key; /* left id << 32 | right id; 0 marks an empty slot (+1 bias) */
    uint32_t rank;
    int32_t merged;
} tok_pair_slot;

struct lms_tokenizer {
    tok_kind kind;

    /* Vocabulary: id -> text (in the arena) and text -> id. The text of a
     * byte-level token is stored as the raw bytes it stands for, so that
     * encode never maps bytes to code points and decode is a copy. */
    int32_t n_vocab; /* highest id + 1 */
    char *arena;
    size_t arena_len, arena_cap;
    uint32_t *tok_off, *tok_len;
    uint8_t *tok_flags;
    int32_t *map_slots; /* open addressing over ids; -1 empty */
    uint32_t map_mask;

    /* Merges: (left, right) -> rank and merged id. With merges_by_score (a
     * SentencePiece GGUF without merges) the rank is that of the merged
     * token's score instead, looked up by concatenation. */
    tok_pair_slot *pairs;
    uint32_t pair_mask;
    size_t n_pairs;
    bool merges_by_score;
    uint32_t *score_rank; /* per id, merges_by_score only */

    /* Added tokens, candidates grouped by first byte, longest first. */
    tok_added *added;
    size_t n_added;
    uint32_t added_first[257]; /* added[added_first[b] .. added_first[b+1]) start with b */

    /* Pipeline. */
    tok_norm_step norm[TOK_MAX_NORMALIZE];
    int n_norm;
    pcre2_code *split[TOK_MAX_SPLITS]; /* Split(Isolated) steps, in order */
    int n_split;
    bool add_prefix_space; /* ByteLevel add_prefix_space */
    bool ignore_merges, byte_fallback, fuse_unk;
    int32_t unk_id, bos_id, eos_id;
    int32_t byte_id[256]; /* byte-level: the symbol of each byte; SPM: <0xNN> */
    int32_t prefix[TOK_MAX_AFFIX], suffix[TOK_MAX_AFFIX];
    int n_prefix, n_suffix;
    int decode_strip_spaces; /* SentencePiece decoder Strip: leading spaces */
};

/* ---- tokenizer_build.c: construction shared by the loaders ---- */
lms_status tok_create(tok_kind kind, int32_t n_vocab, lms_tokenizer **out, lms_error *err);
/* Finishes construction once the vocabulary is indexed: orders the added
 * tokens for matching, resolves the byte table, checks what encode needs. */
lms_status tok_finalize(lms_tokenizer *tok, lms_error *err);
/* Adds a Split step from a Hugging Face (Rust regex) pattern. */
lms_status tok_add_split_regex(lms_tokenizer *tok, const char *pattern, size_t len, lms_error *err);
lms_status tok_add_norm(lms_tokenizer *tok, tok_norm_kind kind, const char *from, size_t from_len,
                        const char *to, size_t to_len, lms_error *err);
/* Registers an added token (matched in raw text before the model runs). */
lms_status tok_add_added(lms_tokenizer *tok, int32_t id, const char *content, size_t len,
                         bool special, bool lstrip, bool rstrip, lms_error *err);
/* The id of an added token or vocabulary entry given by its text as the file
 * spells it (byte-level: in mapped code points), -1 if none. Valid once the
 * vocabulary is indexed. */
int32_t tok_find_token(lms_tokenizer *tok, const char *text, size_t len);

/* ---- tokenizer_vocab.c ---- */
lms_status tok_vocab_alloc(lms_tokenizer *tok, lms_error *err);
/* Sets the text of id; text is as the file spells it (byte-level: mapped
 * code points, converted to raw bytes here). added: also an added token. */
lms_status tok_vocab_set(lms_tokenizer *tok, int32_t id, const char *text, size_t len, bool added,
                         lms_error *err);
/* Builds the text -> id index once every id is set. */
lms_status tok_vocab_index(lms_tokenizer *tok, lms_error *err);
/* Lookup by stored text (raw bytes for byte-level). */
int32_t tok_vocab_lookup(const lms_tokenizer *tok, const char *text, size_t len);
/* Lookup by text as the file spells it (byte-level: mapped code points). */
int32_t tok_vocab_lookup_spelled(lms_tokenizer *tok, const char *text, size_t len);
lms_status tok_pairs_alloc(lms_tokenizer *tok, size_t n_merges, lms_error *err);
/* Records merge number rank "left right" (texts as the file spells them). */
lms_status tok_pairs_add(lms_tokenizer *tok, const char *left, size_t left_len, const char *right,
                         size_t right_len, uint32_t rank, lms_error *err);
/* The rank of merging left and right and the merged id; TOK_NO_RANK if none. */
uint32_t tok_pairs_rank(const lms_tokenizer *tok, int32_t left, int32_t right, int32_t *merged);
void tok_vocab_free(lms_tokenizer *tok);

/* ---- tokenizer_text.c: UTF-8, whitespace, normalizers, byte mapping ---- */
/* A growable byte string, kept NUL-terminated. */
typedef struct {
    char *buf;
    size_t len, cap;
} tok_buf;
bool tok_buf_put(tok_buf *b, const char *s, size_t n); /* false: no memory */
/* Length of the valid UTF-8 that text would become after replacing each
 * maximal invalid subpart by U+FFFD (the WHATWG decoder's rule); equals len
 * when text is valid. */
size_t tok_utf8_valid_len(const char *text, size_t len, bool *valid);
/* Writes that replacement into out (tok_utf8_valid_len bytes). */
void tok_utf8_replace_invalid(const char *text, size_t len, char *out);
/* ECMAScript String.prototype.trimStart / trimEnd on valid UTF-8. */
size_t tok_js_trim_start(const char *text, size_t len);
size_t tok_js_trim_end(const char *text, size_t len);
/* Applies the normalizer steps; *out is malloc'ed. */
lms_status tok_normalize(const lms_tokenizer *tok, const char *text, size_t len, char **out,
                         size_t *out_len, lms_error *err);
/* GPT-2 byte <-> code point map: code point of byte b, and the byte a code
 * point stands for (-1 when none). */
uint32_t tok_byte_to_cp(uint8_t b);
int tok_cp_to_byte(uint32_t cp);
/* Decodes one code point from valid UTF-8; returns its byte length. */
size_t tok_utf8_next(const char *s, size_t len, uint32_t *cp);

/* ---- tokenizer_pretok.c ---- */
/* Compiles a Hugging Face pattern with ECMAScript class semantics. */
lms_status tok_regex_compile(const char *pattern, size_t len, pcre2_code **out, lms_error *err);
/* The GPT-2 pattern of a ByteLevel pre-tokenizer with use_regex. */
extern const char tok_regex_gpt2[];
extern const char tok_regex_llama3[];
extern const char tok_regex_qwen2[];
typedef lms_status (*tok_piece_fn)(void *ctx, const char *piece, size_t len, lms_error *err);
/* Splits text by every Split step in turn (Isolated: matches and the gaps
 * between them are both pieces) and calls emit for each final piece. */
lms_status tok_pretokenize(const lms_tokenizer *tok, const char *text, size_t len,
                           pcre2_match_data *md, tok_piece_fn emit, void *ctx, lms_error *err);

/* ---- tokenizer_bpe.c ---- */
typedef struct {
    int32_t *ids;
    size_t n, cap;
} tok_ids;
lms_status tok_ids_push(tok_ids *v, int32_t id, lms_error *err);

typedef struct tok_bpe_scratch tok_bpe_scratch;
tok_bpe_scratch *tok_bpe_scratch_new(void);
void tok_bpe_scratch_free(tok_bpe_scratch *s);
/* Encodes one pre-tokenized piece (raw bytes for byte-level, normalized
 * text for SentencePiece) and appends the ids. unk_run tracks fuse_unk
 * across the pieces of one section. */
lms_status tok_bpe_piece(const lms_tokenizer *tok, tok_bpe_scratch *s, const char *piece,
                         size_t len, tok_ids *out, bool *unk_run, lms_error *err);

#endif
