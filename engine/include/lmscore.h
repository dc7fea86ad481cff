/*
 * lmscore.h — the engine's public API, and its only public header: open a
 * model, score items against a query, tokenize, report the model and the
 * engine's memory. The daemon, the command-line tools and the clients include
 * this header and nothing else of the engine. It depends on the C library
 * alone.
 *
 * Semantics (docs/contract.md): for item i the sequence is query ++ item_i
 * (item_i ++ query with item_first), built in token space;
 * lp[i][j] = log softmax(logits at the sequence's last position)[label_j]
 * over the full vocabulary; scores[i][j] = exp(lp[i][j]), or the softmax of
 * lp[i][.] over the labels when apply_softmax. Every algorithm returns the
 * same numbers to float rounding, and item i's numbers never depend on any
 * other item.
 *
 * An lms_engine is shared: lms_engine_score may be called from several
 * threads at once (each call has its own scratch; the prefix cache locks).
 */
#ifndef LMS_LMSCORE_H
#define LMS_LMSCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- status and errors ----
 *
 * Every fallible engine function returns an lms_status and, on failure, fills
 * the caller's lms_error (which may be NULL when the caller does not care).
 * The message is for people; `reason` is a stable machine-readable token
 * (e.g. "token_id_exceeds_vocab") that the service maps onto
 * google.rpc.ErrorInfo, and `field` names the request field at fault.
 */
typedef enum {
    LMS_OK = 0,
    LMS_ERR_INVALID_ARGUMENT,   /* the request is malformed: see reason/field */
    LMS_ERR_RESOURCE_EXHAUSTED, /* a configured limit or the memory budget */
    LMS_ERR_IO,                 /* open/read/mmap failed */
    LMS_ERR_FORMAT,             /* a model or tokenizer file is malformed */
    LMS_ERR_UNSUPPORTED,        /* well-formed but not something we run */
    LMS_ERR_NOMEM,              /* an allocation failed */
    LMS_ERR_CANCELLED,          /* the caller asked us to stop */
    LMS_ERR_INTERNAL,           /* a bug: an invariant did not hold */
} lms_status;

typedef struct {
    lms_status status;
    char reason[48];
    char field[48];
    char msg[400];
} lms_error;

/* Fills err (if non-NULL) and returns status, so callers can write
 * `return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "bad magic %x", m);` */
lms_status lms_fail(lms_error *err, lms_status status, const char *reason, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Prepends "context: " to an error already filled by a callee. */
lms_status lms_fail_context(lms_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

const char *lms_status_name(lms_status status);

/* A caller's way to stop long work: should_stop is polled between pieces of
 * it, possibly from several threads at once, and a non-zero answer abandons
 * the work with LMS_ERR_CANCELLED. A NULL should_stop never stops.
 * on_progress, when set, hears after each piece of a step how many of the
 * step's pieces are done (what names the step: "packing the weights",
 * "converting the weights"), from the thread that did it: it must be
 * thread-safe and quick. The engine says how far, never what to log. */
typedef struct {
    int (*should_stop)(void *ctx);
    void *ctx;
    void (*on_progress)(void *ctx, const char *what, size_t done, size_t total);
} lms_stop;

/* ---- tokenizer ----
 *
 * Text <-> token ids, identical to the Hugging Face tokenizers (byte-level
 * BPE: GPT-2, Llama 3, Qwen2/Qwen3; SentencePiece-style BPE: Llama 2). The
 * engine owns its tokenizer (lms_engine_tokenizer); it is immutable and safe
 * to use from many threads at once.
 */
typedef struct lms_tokenizer lms_tokenizer;

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

/* ---- memory ----
 *
 * Every sizeable engine buffer (activations, attention scratch, KV caches,
 * converted weights) is accounted: the bytes the engine holds now and at its
 * peak, over all engines of the process.
 */
size_t lms_alloc_current_bytes(void);
size_t lms_alloc_peak_bytes(void);
void lms_alloc_reset_peak(void); /* peak := current */

/* ---- scoring ---- */
typedef enum {
    LMS_ALGO_AUTO = 0,
    LMS_ALGO_SERIAL = 1,
    LMS_ALGO_PACKED_DENSE = 2,
    LMS_ALGO_PACKED_SEGMENT = 3,
    LMS_ALGO_PREFILL_EXTEND = 4,
} lms_algorithm;
/* The values of lms_algorithm are 0 .. LMS_ALGO_COUNT - 1: arrays indexed by
 * an algorithm have this many entries. */
#define LMS_ALGO_COUNT (LMS_ALGO_PREFILL_EXTEND + 1)

const char *lms_algorithm_name(lms_algorithm algo);
/* Parses "auto", "serial", ...; returns false for an unknown name. */
bool lms_algorithm_parse(const char *name, lms_algorithm *out);

typedef struct {
    const int32_t *ids;
    int32_t len;
} lms_tokens;

typedef struct {
    lms_tokens query;
    const lms_tokens *items;
    int32_t n_items;
    const int32_t *label_ids;
    int32_t n_labels;
    bool apply_softmax;
    bool item_first;
    lms_algorithm algorithm; /* AUTO: the engine's option, then the selector */
} lms_score_request;

typedef struct {
    int32_t n_items;
    int32_t n_labels;
    float *scores;   /* [n_items * n_labels], owned; free with lms_score_result_free */
    float *logprobs; /* [n_items * n_labels] */
    lms_algorithm algorithm;
    char algorithm_reason[200];
    int64_t prompt_tokens;   /* sum over items of the sequence length */
    int64_t computed_tokens; /* rows that went through the model */
    int64_t cached_tokens;   /* query rows served from the prefix cache */
} lms_score_result;

/* Optional callbacks, called on the scoring thread. */
typedef struct {
    /* Items [first, first+n) are final. Return non-zero to stop scoring
     * (the call then fails with LMS_ERR_CANCELLED). */
    int (*on_items)(void *ctx, int32_t first, int32_t n, const float *scores,
                    const float *logprobs);
    /* Polled between pieces of work; non-zero stops with LMS_ERR_CANCELLED. */
    int (*should_stop)(void *ctx);
    void *ctx;
} lms_score_hooks;

/* How the projections (q, k, v, o, gate, up, down, LM head) multiply; the
 * rest (norms, RoPE, attention's scores and sums, softmaxes) is f32 in
 * every precision, attention's keys and values as lms_kv_dtype says.
 *
 *   AUTO    each weight in its checkpoint's own precision: f32 weights in
 *           f32, f16/bf16 weights in 16-bit, ggml's blocks as int8
 *   F32     f32 weights, f32 activations
 *   BF16    16-bit weights (f16 checkpoints keep f16, others round to bf16),
 *           f32 accumulation; activations f32, or, where the compute tier's
 *           instruction takes bf16 (avx512-bf16's vdpbf16ps, amx's
 *           tdpbf16ps), rounded to bf16 once for bf16 weights (as llama.cpp,
 *           oneDNN and PyTorch do) but for the q, k and LM head
 *           projections, which take two bf16 values as BF16X2 does
 *   BF16X2  BF16 with two bf16 values per activation value there (hi + lo,
 *           16 bits of x): about a hundredth of BF16's error for up to
 *           twice its time; elsewhere the same as BF16
 *   INT8    int8 weights in blocks of 32 with a scale each (ggml's blocks
 *           as they are, others quantised as ggml's Q8_0 does), activations
 *           quantised per row and block of 32 to one int8 code per value
 *           (as llama.cpp's Q8_0 path does), exact integer block sums
 *   INT8X2  INT8 with two int8 codes per activation value (15 bits): about
 *           a hundredth of INT8's error for up to twice its time
 *
 * BF16 and INT8 need a compute tier with 16-bit and int8 kernels (AVX2,
 * FMA and F16C at least); without one the engine runs f32 and says why
 * (lms_model_info.precision_reason). */
typedef enum {
    LMS_PRECISION_AUTO = 0,
    LMS_PRECISION_F32 = 1,
    LMS_PRECISION_BF16 = 2,
    LMS_PRECISION_INT8 = 3,
    LMS_PRECISION_INT8X2 = 4,
    LMS_PRECISION_BF16X2 = 5,
} lms_precision;

const char *lms_precision_name(lms_precision precision);
/* Parses "auto", "f32", "bf16", "bf16x2", "int8", "int8x2"; false for an
 * unknown name. */
bool lms_precision_parse(const char *name, lms_precision *out);

/* How attention holds its keys and values, in the batch and in the prefix
 * cache (vLLM's --kv-cache-dtype):
 *
 *   AUTO  f16 where the projections are not all f32, else f32
 *   F32   f32: attention's products as exact as the f32 precision's, at
 *         twice the prefix cache's bytes per token of f16
 *   F16   f16, rounded once (clamped to +-65504), products on the tier's
 *         16-bit kernel; needs a tier with 16-bit kernels
 *
 * Queries, scores, softmax and sums stay f32 in every case. */
typedef enum {
    LMS_KV_DTYPE_AUTO = 0,
    LMS_KV_DTYPE_F32 = 1,
    LMS_KV_DTYPE_F16 = 2,
} lms_kv_dtype;

const char *lms_kv_dtype_name(lms_kv_dtype dtype);
/* Parses "auto", "f32", "f16"; false for an unknown name. */
bool lms_kv_dtype_parse(const char *name, lms_kv_dtype *out);

typedef struct {
    lms_algorithm algorithm;       /* default AUTO */
    int32_t max_packed_tokens;     /* rows per forward pass (pack budget); default 8192 */
    int32_t dense_mask_max_tokens; /* packed_dense refuses larger packs; default 8192 */
    size_t prefix_cache_bytes;     /* LRU budget for cached query KV; default 256 MiB */
    int32_t delimiter;             /* SGLang-style delimiter token id, -1 for none */
    int32_t max_items;             /* too_many_items above this; default 10000 */
    int32_t max_sequence_tokens;   /* sequence_too_long above this; default context length */
    lms_stop open_stop;      /* polled while lms_engine_open converts the weights; default never */
    lms_precision precision; /* default AUTO */
    lms_kv_dtype kv_dtype;   /* default AUTO */
    /* The compute tier (instruction set of the kernels): NULL or "auto"
     * for the fastest the CPU runs, else one of lms_isa_names(); a tier the
     * CPU cannot run fails lms_engine_open. The vector tiers give the
     * same numbers; the amx tiers and avx512-bf16 round the activations of
     * BF16 projections to bf16 (two bf16 values each) and stay within the
     * precision gates of them (docs/engine.md). */
    const char *isa;
    /* Test hook (lmscored-test-hooks' LMSCORE_TEST_DROP_AMX): auto takes
     * the CPU for one with AMX whose amx tier fails its start-up
     * self-check, so that a dropped tier (lms_model_info.isa_dropped) can
     * be tested on any CPU. false outside tests. */
    bool test_drop_amx;
    /* Test hook (lmscored-test-hooks' LMSCORE_TEST_SELF_CHECK_SIGNAL): auto
     * takes the CPU for one with AVX-512 BF16 and that tier's start-up
     * self-check raises this signal before it multiplies (a kernel that
     * faults), so that a self-check's fault can be tested on any CPU: the
     * tier is dropped, the engine opens on the next. 0 outside tests. */
    int test_self_check_signal;
} lms_engine_options;

/* "auto|" and the compute tiers' names, fastest first, '|'-separated
 * (static storage). */
const char *lms_isa_names(void);
/* Is name "auto" or a compute tier's name? */
bool lms_isa_known(const char *name);

void lms_engine_options_default(lms_engine_options *opt);

typedef struct lms_engine lms_engine;

lms_status lms_engine_open(const char *model_path, const lms_engine_options *opt, lms_engine **out,
                           lms_error *err);
void lms_engine_close(lms_engine *engine);

/* What the engine reports about the model it runs: the checkpoint's name,
 * family and geometry, and how it computes. */
typedef struct {
    char name[128];                        /* general.name, or the directory's basename */
    const char *architecture;              /* "llama", "qwen2", "qwen3" (static storage) */
    int32_t n_layers, d_model, d_ff;       /* transformer blocks, hidden and FFN widths */
    int32_t n_heads, n_kv_heads, head_dim; /* attention heads (query, key/value), width */
    int32_t vocab_size, context_length;
    /* The projections' precision: "f32", "bf16", "int8", "int8x2", or
     * "mixed" when AUTO kept weights of several precisions (static storage) */
    const char *precision;
    char precision_reason[200]; /* why: the option, the checkpoint, the CPU */
    char weights[96];           /* the projections' formats, e.g. "q8 x197" */
    const char *isa;            /* the compute tier, e.g. "avx2" (static storage) */
    char isa_dropped[200];      /* a faster tier auto passed over and why (its start-up
                                 * self-check failed, the OS refused it), or "" */
    char kernels[64];           /* by format, e.g. "int8 avx512-vnni, 16-bit avx512" */
    const char *kv_dtype;       /* attention's keys and values: "f32" or "f16" (static storage) */
    int64_t weight_bytes;       /* the projections and embedding as held */
    int64_t parameters;         /* their element count */
} lms_model_info;

void lms_engine_model_info(const lms_engine *engine, lms_model_info *out);
const lms_engine_options *lms_engine_options_get(const lms_engine *engine);
/* NULL when the checkpoint carries no tokenizer (token-id requests only). */
const lms_tokenizer *lms_engine_tokenizer(const lms_engine *engine);

/* The query prefix cache since the engine opened: lookups that found the
 * query's KV (hits) or not (misses), entries evicted for room, and the bytes
 * held against the budget. A ScoreItems-style session looks up once, at
 * begin. */
typedef struct {
    int64_t hits, misses, evictions;
    size_t bytes, max_bytes;
} lms_cache_stats;

void lms_engine_cache_stats(lms_engine *engine, lms_cache_stats *out);

/* Validates then scores. On LMS_ERR_INVALID_ARGUMENT, err->reason is one of
 * empty_label_token_ids, negative_token_id, token_id_exceeds_vocab,
 * empty_query, delimiter_in_content, too_many_items, sequence_too_long and
 * err->field names the offending field (e.g. "items[3]"). */
lms_status lms_engine_score(lms_engine *engine, const lms_score_request *req,
                            const lms_score_hooks *hooks, lms_score_result *out, lms_error *err);
void lms_score_result_free(lms_score_result *res);
/* lms_engine_score's checks alone, with its reasons: a caller that scores a
 * request in several calls (a stream, a chunk at a time) refuses a bad item
 * before it has sent any result. */
lms_status lms_engine_validate(const lms_engine *engine, const lms_score_request *req,
                               lms_error *err);

/* A scoring session: one query and label set, items arriving in batches (the
 * ScoreItems stream). begin validates the header (its items are ignored; the
 * query alone must fit in max_sequence_tokens) and prefills the query once,
 * polling hooks->should_stop (hooks may be NULL; on_items is not called);
 * its KV stays pinned until end, so every batch
 * runs as extends over it whatever the prefix cache evicts meanwhile. Item
 * indices in results and callbacks are per batch. A session is used by one
 * thread at a time; different sessions may run concurrently. */
typedef struct lms_score_session lms_score_session;

lms_status lms_score_session_begin(lms_engine *engine, const lms_score_request *header,
                                   const lms_score_hooks *hooks, lms_score_session **out,
                                   lms_error *err);
lms_status lms_score_session_score(lms_score_session *session, const lms_tokens *items,
                                   int32_t n_items, const lms_score_hooks *hooks,
                                   lms_score_result *out, lms_error *err);
void lms_score_session_end(lms_score_session *session);

#endif
