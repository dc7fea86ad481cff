/*
 * llama_peer.c — llama.cpp as the peer scorer (llama_peer.h), through the
 * prebuilt libllama of the npm package @node-llama-cpp/linux-x64 that
 * tests/ggml/npm pins, opened with dlopen: no llama.h is compiled in.
 *
 * The functions called have kept their signatures across many llama.cpp
 * releases, and so has llama_batch. The two parameter structs have not:
 * they are taken from llama.cpp's own *_default_params into a room larger
 * than either (x86-64 passes and returns structs of this size in memory,
 * so the library reads and writes only its own bytes of the room), and
 * only the fields below are written, at their offsets in the pinned
 * release. That layout is checked twice: the library's defaults must be
 * the known ones at those offsets, and the context must report back
 * (llama_n_ctx, llama_n_threads ...) what was asked.
 *
 * The KV cache is unified (one stream that all sequences share): with
 * llama_memory_seq_cp the items' sequences then share the query's cells
 * instead of copying them, llama.cpp's recommended setting for sequences
 * with a long common prefix.
 */
#include "llama_peer.h"

#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama.h's batch: what llama_decode reads. */
typedef struct {
    int32_t n_tokens;
    int32_t *token;
    float *embd;
    int32_t *pos;
    int32_t *n_seq_id;
    int32_t **seq_id;
    int8_t *logits; /* non-zero: output this token's logits */
} llama_batch;

typedef struct {
    unsigned char raw[1024];
} params_room;

/* A field of llama_context_params in the pinned release: its offset, its
 * size (4: a 32-bit integer or enum, 1: a bool) and the library's default. */
typedef struct {
    const char *name;
    size_t offset, size;
    int32_t library_default;
} context_field;

static const context_field N_CTX = {"n_ctx", 0, 4, 512};
static const context_field N_BATCH = {"n_batch", 4, 4, 2048};
static const context_field N_UBATCH = {"n_ubatch", 8, 4, 512};
static const context_field N_SEQ_MAX = {"n_seq_max", 12, 4, 1};
static const context_field N_THREADS = {"n_threads", 28, 4, 4};
static const context_field N_THREADS_BATCH = {"n_threads_batch", 32, 4, 4};
static const context_field FLASH_ATTN_TYPE = {"flash_attn_type", 52, 4, -1}; /* auto */
static const context_field TYPE_K = {"type_k", 104, 4, 1};                   /* GGML_TYPE_F16 */
static const context_field TYPE_V = {"type_v", 108, 4, 1};
static const context_field SWA_FULL = {"swa_full", 132, 1, 1};
static const context_field KV_UNIFIED = {"kv_unified", 133, 1, 0};

enum { LOG_LEVEL_WARN = 3, LOG_LEVEL_ERROR = 4 }; /* ggml_log_level */
enum { GGML_TYPE_F32 = 0, LLAMA_FLASH_ATTN_TYPE_DISABLED = 0 };

typedef void (*log_callback)(int level, const char *text, void *user_data);

/* The entry points used, by their llama.h names. */
typedef struct {
    void (*llama_log_set)(log_callback callback, void *user_data);
    void (*llama_backend_init)(void);
    void (*llama_backend_free)(void);
    void (*ggml_backend_load_all_from_path)(const char *dir);
    const char *(*llama_print_system_info)(void);
    size_t (*llama_max_parallel_sequences)(void);
    params_room (*llama_model_default_params)(void);
    void *(*llama_model_load_from_file)(const char *path, params_room params);
    void (*llama_model_free)(void *model);
    const void *(*llama_model_get_vocab)(const void *model);
    int32_t (*llama_vocab_n_tokens)(const void *vocab);
    params_room (*llama_context_default_params)(void);
    void *(*llama_init_from_model)(void *model, params_room params);
    void (*llama_free)(void *ctx);
    uint32_t (*llama_n_ctx)(const void *ctx);
    uint32_t (*llama_n_ctx_seq)(const void *ctx);
    uint32_t (*llama_n_batch)(const void *ctx);
    uint32_t (*llama_n_seq_max)(const void *ctx);
    int32_t (*llama_n_threads)(void *ctx);
    int32_t (*llama_n_threads_batch)(void *ctx);
    void *(*llama_get_memory)(const void *ctx);
    void (*llama_memory_clear)(void *memory, bool data);
    void (*llama_memory_seq_cp)(void *memory, int32_t src, int32_t dst, int32_t p0, int32_t p1);
    llama_batch (*llama_batch_init)(int32_t n_tokens, int32_t embd, int32_t n_seq_max);
    void (*llama_batch_free)(llama_batch batch);
    int32_t (*llama_decode)(void *ctx, llama_batch batch);
    float *(*llama_get_logits_ith)(void *ctx, int32_t i);
} llama_api;

struct llama_peer {
    void *lib;
    llama_api api;
    bool backend_ready;
    void *model, *ctx;
    llama_batch batch; /* room for settings.max_tokens tokens */
    llama_peer_settings settings;
    int32_t n_vocab;
    char features[256];
    char last_log[300]; /* llama.cpp's last warning or error, for our errors */
};

static void keep_warnings(int level, const char *text, void *user_data)
{
    llama_peer *peer = user_data;
    if (level != LOG_LEVEL_WARN && level != LOG_LEVEL_ERROR) return;
    snprintf(peer->last_log, sizeof peer->last_log, "%s", text);
    peer->last_log[strcspn(peer->last_log, "\n")] = 0;
}

/* lib_dir's libllama.*so, the one the npm package ships. */
static lms_status find_libllama(const char *lib_dir, char *path, size_t size, lms_error *err)
{
    DIR *dir = opendir(lib_dir);
    if (!dir) return lms_fail(err, LMS_ERR_IO, NULL, NULL, "cannot list %s", lib_dir);
    int found = 0;
    for (struct dirent *e; (e = readdir(dir));) {
        const size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, "libllama.", 9) || n < 12 || strcmp(e->d_name + n - 3, ".so"))
            continue;
        if (found++) break;
        snprintf(path, size, "%s/%s", lib_dir, e->d_name);
    }
    closedir(dir);
    if (found != 1)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL,
                        "%s holds %s libllama.*.so (the npm package @node-llama-cpp/linux-x64: "
                        "ctest ggml.npm or the ggml-ref target installs it)",
                        lib_dir, found ? "more than one" : "no");
    return LMS_OK;
}

static lms_status resolve(llama_peer *p, lms_error *err)
{
    llama_api *a = &p->api;
    const struct {
        const char *name;
        void **slot;
    } table[] = {
#define ENTRY(fn) {#fn, (void **)&a->fn}
        ENTRY(llama_log_set),
        ENTRY(llama_backend_init),
        ENTRY(llama_backend_free),
        ENTRY(ggml_backend_load_all_from_path),
        ENTRY(llama_print_system_info),
        ENTRY(llama_max_parallel_sequences),
        ENTRY(llama_model_default_params),
        ENTRY(llama_model_load_from_file),
        ENTRY(llama_model_free),
        ENTRY(llama_model_get_vocab),
        ENTRY(llama_vocab_n_tokens),
        ENTRY(llama_context_default_params),
        ENTRY(llama_init_from_model),
        ENTRY(llama_free),
        ENTRY(llama_n_ctx),
        ENTRY(llama_n_ctx_seq),
        ENTRY(llama_n_batch),
        ENTRY(llama_n_seq_max),
        ENTRY(llama_n_threads),
        ENTRY(llama_n_threads_batch),
        ENTRY(llama_get_memory),
        ENTRY(llama_memory_clear),
        ENTRY(llama_memory_seq_cp),
        ENTRY(llama_batch_init),
        ENTRY(llama_batch_free),
        ENTRY(llama_decode),
        ENTRY(llama_get_logits_ith),
#undef ENTRY
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        /* dlsym searches libllama and the libraries it loaded (libggml). */
        *table[i].slot = dlsym(p->lib, table[i].name);
        if (!*table[i].slot)
            return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                            "%s is not in this libllama (a llama.cpp release other than the "
                            "pinned one?)",
                            table[i].name);
    }
    return LMS_OK;
}

static int32_t field_get(const params_room *room, const context_field *f)
{
    if (f->size == 1) return room->raw[f->offset];
    int32_t v;
    memcpy(&v, room->raw + f->offset, sizeof v);
    return v;
}

static void field_set(params_room *room, const context_field *f, int32_t v)
{
    if (f->size == 1)
        room->raw[f->offset] = (unsigned char)v;
    else
        memcpy(room->raw + f->offset, &v, sizeof v);
}

static lms_status context_params(const llama_peer *p, params_room *room, lms_error *err)
{
    *room = p->api.llama_context_default_params();
    const context_field *known[] = {&N_CTX,     &N_BATCH,         &N_UBATCH,        &N_SEQ_MAX,
                                    &N_THREADS, &N_THREADS_BATCH, &FLASH_ATTN_TYPE, &TYPE_K,
                                    &TYPE_V,    &SWA_FULL,        &KV_UNIFIED};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (field_get(room, known[i]) != known[i]->library_default)
            return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                            "llama_context_params is not the pinned release's layout: %s (offset "
                            "%zu) defaults to %d, not %d",
                            known[i]->name, known[i]->offset, field_get(room, known[i]),
                            known[i]->library_default);
    field_set(room, &N_CTX, p->settings.max_tokens);
    field_set(room, &N_BATCH, p->settings.max_tokens);
    field_set(room, &N_SEQ_MAX, p->settings.max_sequences);
    field_set(room, &N_THREADS, p->settings.threads);
    field_set(room, &N_THREADS_BATCH, p->settings.threads);
    field_set(room, &KV_UNIFIED, 1);
    if (p->settings.f32_attention) {
        field_set(room, &TYPE_K, GGML_TYPE_F32);
        field_set(room, &TYPE_V, GGML_TYPE_F32);
        field_set(room, &FLASH_ATTN_TYPE, LLAMA_FLASH_ATTN_TYPE_DISABLED);
    }
    return LMS_OK;
}

/* The context took what context_params asked for. */
static lms_status check_context(const llama_peer *p, lms_error *err)
{
    const llama_api *a = &p->api;
    const uint32_t n_ctx = a->llama_n_ctx(p->ctx), n_ctx_seq = a->llama_n_ctx_seq(p->ctx),
                   n_batch = a->llama_n_batch(p->ctx), n_seq = a->llama_n_seq_max(p->ctx);
    const int32_t threads = a->llama_n_threads(p->ctx),
                  threads_batch = a->llama_n_threads_batch(p->ctx);
    const uint32_t tokens = (uint32_t)p->settings.max_tokens;
    if (n_ctx < tokens || n_ctx_seq != n_ctx || n_batch < tokens ||
        n_seq != (uint32_t)p->settings.max_sequences || threads != p->settings.threads ||
        threads_batch != p->settings.threads)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL,
                        "llama.cpp's context is not the one asked for: n_ctx %u (asked %u), "
                        "n_ctx_seq %u (unified: n_ctx), n_batch %u, n_seq_max %u (asked %d), "
                        "threads %d/%d (asked %d)",
                        n_ctx, tokens, n_ctx_seq, n_batch, n_seq, p->settings.max_sequences,
                        threads, threads_batch, p->settings.threads);
    return LMS_OK;
}

/* "CPU : SSE3 = 1 | AVX = 1 | AVX512 = 0 | ..." -> "SSE3 AVX ...". */
static void enabled_features(const char *info, char *out, size_t size)
{
    size_t used = 0;
    out[0] = 0;
    for (const char *s = info; *s && used + 1 < size;) {
        const size_t len = strcspn(s, "|");
        const char *colon = memchr(s, ':', len), *start = colon ? colon + 1 : s;
        char piece[64], name[64];
        int value;
        snprintf(piece, sizeof piece, "%.*s", (int)(len - (size_t)(start - s)), start);
        if (sscanf(piece, " %63[A-Za-z0-9_] = %d", name, &value) == 2 && value == 1) {
            const int n = snprintf(out + used, size - used, "%s%s", used ? " " : "", name);
            if (n > 0) used += (size_t)n;
        }
        s += len + (s[len] == '|');
    }
}

lms_status llama_peer_open(const char *lib_dir, const char *model_path,
                           const llama_peer_settings *settings, llama_peer **out, lms_error *err)
{
    *out = NULL;
    if (settings->threads < 1 || settings->max_tokens < 1 || settings->max_sequences < 1)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                        "llama.cpp needs at least one thread, token and sequence");
    llama_peer *p = calloc(1, sizeof *p);
    if (!p) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for llama.cpp's peer");
    p->settings = *settings;
    char path[4096];
    lms_status st = find_libllama(lib_dir, path, sizeof path, err);
    if (st == LMS_OK && !(p->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        st = lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s", dlerror());
    if (st == LMS_OK) st = resolve(p, err);
    if (st != LMS_OK) {
        llama_peer_close(p);
        return st;
    }
    llama_api *a = &p->api;
    a->llama_log_set(keep_warnings, p);
    a->llama_backend_init();
    p->backend_ready = true;
    a->ggml_backend_load_all_from_path(lib_dir);
    enabled_features(a->llama_print_system_info(), p->features, sizeof p->features);
    if ((size_t)settings->max_sequences > a->llama_max_parallel_sequences())
        st = lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                      "llama.cpp runs at most %zu sequences at once, %d asked",
                      a->llama_max_parallel_sequences(), settings->max_sequences);
    if (st == LMS_OK &&
        !(p->model = a->llama_model_load_from_file(model_path, a->llama_model_default_params())))
        st = lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "llama.cpp cannot load %s: %s", model_path,
                      p->last_log);
    params_room cp;
    if (st == LMS_OK) st = context_params(p, &cp, err);
    if (st == LMS_OK && !(p->ctx = a->llama_init_from_model(p->model, cp)))
        st = lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, NULL, NULL,
                      "llama.cpp cannot make a context for %d tokens: %s", settings->max_tokens,
                      p->last_log);
    if (st == LMS_OK) st = check_context(p, err);
    if (st == LMS_OK) {
        p->n_vocab = a->llama_vocab_n_tokens(a->llama_model_get_vocab(p->model));
        p->batch = a->llama_batch_init(settings->max_tokens, 0, 1);
        if (!p->batch.token)
            st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for llama.cpp's batch");
    }
    if (st != LMS_OK) {
        llama_peer_close(p);
        return st;
    }
    *out = p;
    return LMS_OK;
}

void llama_peer_close(llama_peer *p)
{
    if (!p) return;
    const llama_api *a = &p->api;
    if (p->batch.token) a->llama_batch_free(p->batch);
    if (p->ctx) a->llama_free(p->ctx);
    if (p->model) a->llama_model_free(p->model);
    if (p->backend_ready) {
        a->llama_backend_free();
        a->llama_log_set(NULL, NULL);
    }
    if (p->lib) dlclose(p->lib);
    free(p);
}

const char *llama_peer_features(const llama_peer *p)
{
    return p->features;
}

static lms_status check_ids(const llama_peer *p, const int32_t *ids, int32_t n, const char *field,
                            lms_error *err)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= p->n_vocab)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "token_id_exceeds_vocab", field,
                            "%s[%d] = %d is not a token of the %d-token vocabulary", field, i,
                            ids[i], p->n_vocab);
    return LMS_OK;
}

static lms_status check_request(const llama_peer *p, const lms_score_request *req, lms_error *err)
{
    if (req->item_first || req->query.len < 1 || req->n_items < 1 || req->n_labels < 1)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, NULL,
                        "llama.cpp's peer scores a query first, at least one item and label");
    if (req->n_items + 1 > p->settings.max_sequences)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "too_many_items", "items",
                        "%d items need %d sequences; the context has %d", req->n_items,
                        req->n_items + 1, p->settings.max_sequences);
    int64_t tokens = req->query.len;
    lms_status st = check_ids(p, req->query.ids, req->query.len, "query", err);
    for (int32_t i = 0; i < req->n_items && st == LMS_OK; i++) {
        char field[32];
        snprintf(field, sizeof field, "items[%d]", i);
        if (req->items[i].len < 1)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field, "%s is empty", field);
        tokens += req->items[i].len;
        st = check_ids(p, req->items[i].ids, req->items[i].len, field, err);
    }
    if (st == LMS_OK) st = check_ids(p, req->label_ids, req->n_labels, "label_token_ids", err);
    if (st == LMS_OK && tokens > p->settings.max_tokens)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "sequence_too_long", NULL,
                        "the request has %lld tokens; the context holds %d", (long long)tokens,
                        p->settings.max_tokens);
    return st;
}

static void batch_add(llama_batch *b, int32_t token, int32_t pos, int32_t seq, bool output)
{
    const int32_t i = b->n_tokens++;
    b->token[i] = token;
    b->pos[i] = pos;
    b->n_seq_id[i] = 1;
    b->seq_id[i][0] = seq;
    b->logits[i] = output;
}

static lms_status decode(llama_peer *p, const char *what, lms_error *err)
{
    const int32_t rc = p->api.llama_decode(p->ctx, p->batch);
    if (rc != 0)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "llama_decode (%s) returned %d: %s",
                        what, rc, p->last_log);
    return LMS_OK;
}

/* log softmax(logits)[label] for each label, over n_vocab logits. */
static void label_logprobs(const float *logits, int32_t n_vocab, const int32_t *labels,
                           int32_t n_labels, float *out)
{
    double max = logits[0], sum = 0;
    for (int32_t v = 1; v < n_vocab; v++)
        max = logits[v] > max ? logits[v] : max;
    for (int32_t v = 0; v < n_vocab; v++)
        sum += exp((double)logits[v] - max);
    const double log_z = max + log(sum);
    for (int32_t j = 0; j < n_labels; j++)
        out[j] = (float)((double)logits[labels[j]] - log_z);
}

lms_status llama_peer_score(llama_peer *p, const lms_score_request *req, float *logprobs,
                            lms_error *err)
{
    lms_status st = check_request(p, req, err);
    if (st != LMS_OK) return st;
    const llama_api *a = &p->api;
    void *memory = a->llama_get_memory(p->ctx);
    a->llama_memory_clear(memory, true);
    p->batch.n_tokens = 0;
    for (int32_t t = 0; t < req->query.len; t++)
        batch_add(&p->batch, req->query.ids[t], t, 0, false);
    st = decode(p, "the query", err);
    if (st != LMS_OK) return st;
    for (int32_t i = 0; i < req->n_items; i++)
        a->llama_memory_seq_cp(memory, 0, i + 1, -1, -1);
    p->batch.n_tokens = 0;
    for (int32_t i = 0; i < req->n_items; i++) {
        const lms_tokens *item = &req->items[i];
        for (int32_t t = 0; t < item->len; t++)
            batch_add(&p->batch, item->ids[t], req->query.len + t, i + 1, t == item->len - 1);
    }
    st = decode(p, "the items", err);
    /* Item i's output is at the batch index of its last token. */
    int32_t last = -1;
    for (int32_t i = 0; i < req->n_items && st == LMS_OK; i++) {
        last += req->items[i].len;
        const float *logits = a->llama_get_logits_ith(p->ctx, last);
        if (!logits)
            return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL,
                            "llama.cpp has no logits for item %d's last token (batch index %d): %s",
                            i, last, p->last_log);
        label_logprobs(logits, p->n_vocab, req->label_ids, req->n_labels,
                       logprobs + (size_t)i * (size_t)req->n_labels);
    }
    return st;
}
