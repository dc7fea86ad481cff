/*
 * score.c — lms_engine_score: validate a request, build its token sequences,
 * run the chosen algorithm, turn label log-probabilities into scores.
 *
 * Sequences are built in token space: prefix = query (+ delimiter in
 * delimited mode), sequence_i = prefix ++ item_i (item_i ++ query with
 * item_first). Every algorithm evaluates exactly these sequences:
 *
 *   serial          one forward pass per sequence (item_first: independent
 *                   sequences, as many per pass as the token budget holds)
 *   packed_*        prefix rows, then each item as a segment that sees the
 *                   prefix and itself (dense: through a T×T mask)
 *   prefill_extend  the prefix once (or from the prefix cache), then items
 *                   in batches attending to the cached prefix KV
 *
 * Every kernel computes a row from that row alone and attention gives a
 * row the same bits whatever the batch (docs/engine.md), so an item's
 * numbers are bit-identical whatever the other items are.
 */
#include "engine_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "lm_head.h"
#include "selector.h"

typedef struct {
    lms_engine *e;
    const lms_score_request *req;
    const lms_score_hooks *hooks;
    int32_t *prefix; /* query (+ delimiter); owned */
    int32_t prefix_len;
    float *lp;       /* [n_items × n_labels] */
    uint8_t *done;   /* [n_items] */
    int32_t emitted; /* items [0, emitted) handed to on_items */
    lms_score_result *res;
    prefix_cache_entry *pinned; /* a session's prefix KV, or NULL */
} score_state;

/* How a pass keeps its segments apart: attention over each segment's own rows
 * (and the prefix), or one T×T mask (packed_dense). */
typedef enum { SEGMENT_RUNS, DENSE_MASK } segment_attention;

/* The rows of item i that count against a pass's budget: the item alone
 * (after a shared prefix) or its whole sequence (independent sequences). */
typedef enum { ITEM_ALONE, WHOLE_SEQUENCE } item_span;

/* Independent sequences: one per forward pass, or as many as the token
 * budget holds. */
typedef enum { ONE_PER_PASS, AS_MANY_AS_FIT } sequence_batching;

/* ---- validation ---------------------------------------------------------- */

static lms_status check_ids(const int32_t *ids, int32_t n, int32_t vocab, const char *what,
                            lms_error *err)
{
    for (int32_t i = 0; i < n; i++) {
        if (ids[i] < 0)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "negative_token_id", what,
                            "%s[%d] = %d: token ids must be non-negative", what, i, ids[i]);
        if (ids[i] >= vocab)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "token_id_exceeds_vocab", what,
                            "%s[%d] = %d: the vocabulary has %d tokens", what, i, ids[i], vocab);
    }
    return LMS_OK;
}

static int contains(const int32_t *ids, int32_t n, int32_t id)
{
    for (int32_t i = 0; i < n; i++)
        if (ids[i] == id) return 1;
    return 0;
}

static lms_status validate(const lms_engine *e, const lms_score_request *r, lms_error *err)
{
    const int32_t vocab = e->model->cfg.vocab_size, delim = e->opt.delimiter;
    char field[48];
    if (r->n_labels <= 0 || !r->label_ids)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "empty_label_token_ids", "label_token_ids",
                        "label_token_ids must not be empty");
    lms_status st = check_ids(r->label_ids, r->n_labels, vocab, "label_token_ids", err);
    if (st != LMS_OK) return st;
    if (r->n_items < 0 || (r->n_items > 0 && !r->items))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "items", "items is malformed");
    if (r->n_items > e->opt.max_items)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "too_many_items", "items",
                        "%d items: the limit is %d", r->n_items, e->opt.max_items);
    if (r->query.len < 0 || (r->query.len > 0 && !r->query.ids))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "query", "query is malformed");
    st = check_ids(r->query.ids, r->query.len, vocab, "query", err);
    if (st != LMS_OK) return st;
    if (delim >= 0 && r->query.len == 0)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "empty_query", "query",
                        "delimited multi-item scoring needs a non-empty query");
    if (delim >= 0 && contains(r->query.ids, r->query.len, delim))
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "delimiter_in_content", "query",
                        "the query contains the delimiter token %d", delim);
    const int32_t extra = r->query.len + (delim >= 0 && !r->item_first ? 1 : 0);
    for (int32_t i = 0; i < r->n_items; i++) {
        const lms_tokens *it = &r->items[i];
        snprintf(field, sizeof field, "items[%d]", i);
        if (it->len < 0 || (it->len > 0 && !it->ids))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, field, "%s is malformed", field);
        st = check_ids(it->ids, it->len, vocab, field, err);
        if (st != LMS_OK) return st;
        if (delim >= 0 && contains(it->ids, it->len, delim))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "delimiter_in_content", field,
                            "%s contains the delimiter token %d", field, delim);
        if (it->len + extra == 0)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "empty_query", "query",
                            "%s and the query are both empty: there is no token to score at",
                            field);
        if ((int64_t)it->len + extra > e->opt.max_sequence_tokens)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "sequence_too_long", field,
                            "query + %s is %d tokens: the limit is %d", field, it->len + extra,
                            e->opt.max_sequence_tokens);
    }
    return LMS_OK;
}

/* ---- results ------------------------------------------------------------- */

static void finish_item(score_state *j, int32_t i)
{
    const int32_t nl = j->req->n_labels;
    const float *lp = j->lp + (size_t)i * nl;
    float *sc = j->res->scores + (size_t)i * nl;
    if (j->req->apply_softmax) {
        float mx = -INFINITY;
        for (int32_t k = 0; k < nl; k++)
            mx = lp[k] > mx ? lp[k] : mx;
        double sum = 0;
        for (int32_t k = 0; k < nl; k++)
            sum += exp((double)lp[k] - mx);
        for (int32_t k = 0; k < nl; k++)
            sc[k] = (float)(exp((double)lp[k] - mx) / sum);
    } else {
        for (int32_t k = 0; k < nl; k++)
            sc[k] = (float)exp((double)lp[k]);
    }
    memcpy(j->res->logprobs + (size_t)i * nl, lp, (size_t)nl * sizeof(float));
    j->done[i] = 1;
}

/* Hands the longest finished run of items after the last one emitted to the
 * caller's on_items, in index order. */
static lms_status emit_ready(score_state *j, lms_error *err)
{
    int32_t first = j->emitted;
    while (j->emitted < j->req->n_items && j->done[j->emitted])
        j->emitted++;
    int32_t n = j->emitted - first;
    const lms_score_hooks *h = j->hooks;
    if (n == 0 || !h || !h->on_items) return LMS_OK;
    const size_t off = (size_t)first * j->req->n_labels;
    if (h->on_items(h->ctx, first, n, j->res->scores + off, j->res->logprobs + off))
        return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "cancelled by the caller");
    return LMS_OK;
}

static int stop_requested(void *ctx)
{
    const score_state *j = ctx;
    return j->hooks && j->hooks->should_stop && j->hooks->should_stop(j->hooks->ctx);
}

/* ---- batches ------------------------------------------------------------- */

/* A forward batch under construction. */
typedef struct {
    int32_t cap, n_rows, n_segments, n_score;
    int32_t *tokens, *positions, *seg_begin, *seg_end, *score_rows, *score_item;
    float *lp; /* [cap × n_labels]: score rows' label log-probs */
} batch_buf;

static lms_status batch_init(batch_buf *b, int32_t cap_rows, int32_t cap_items, int32_t n_labels,
                             lms_error *err)
{
    memset(b, 0, sizeof *b);
    b->cap = cap_rows;
    b->tokens = malloc((size_t)cap_rows * sizeof(int32_t));
    b->positions = malloc((size_t)cap_rows * sizeof(int32_t));
    b->seg_begin = malloc((size_t)cap_items * sizeof(int32_t));
    b->seg_end = malloc((size_t)cap_items * sizeof(int32_t));
    b->score_rows = malloc((size_t)cap_items * sizeof(int32_t));
    b->score_item = malloc((size_t)cap_items * sizeof(int32_t));
    b->lp = malloc((size_t)cap_items * n_labels * sizeof(float));
    if (!b->tokens || !b->positions || !b->seg_begin || !b->seg_end || !b->score_rows ||
        !b->score_item || !b->lp)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for a %d-row batch", cap_rows);
    return LMS_OK;
}

static void batch_free(batch_buf *b)
{
    free(b->tokens);
    free(b->positions);
    free(b->seg_begin);
    free(b->seg_end);
    free(b->score_rows);
    free(b->score_item);
    free(b->lp);
}

static void put_rows(batch_buf *b, const int32_t *ids, int32_t n, int32_t first_pos)
{
    memcpy(b->tokens + b->n_rows, ids, (size_t)n * sizeof(int32_t));
    for (int32_t k = 0; k < n; k++)
        b->positions[b->n_rows + k] = first_pos + k;
    b->n_rows += n;
}

static void add_score(batch_buf *b, int32_t row, int32_t item)
{
    b->score_rows[b->n_score] = row;
    b->score_item[b->n_score] = item;
    b->n_score++;
}

static lms_status run_batch(score_state *j, batch_buf *b, int32_t prefix_rows,
                            segment_attention attention, const kv_prefix *cached,
                            kv_prefix *capture, lms_error *err)
{
    forward_batch fb = {
        .layout = {.n_rows = b->n_rows,
                   .prefix_rows = prefix_rows,
                   .n_segments = b->n_segments,
                   .seg_begin = b->seg_begin,
                   .seg_end = b->seg_end,
                   .dense_mask = attention == DENSE_MASK},
        .tokens = b->tokens,
        .positions = b->positions,
        .cached = cached,
        .capture = capture,
        .n_score_rows = b->n_score,
        .score_rows = b->score_rows,
        .n_labels = j->req->n_labels,
        .labels = j->req->label_ids,
        .label_logprobs = b->lp,
        .should_stop = stop_requested,
        .stop_ctx = j,
    };
    lms_status st = forward_run(j->e->model, j->e->weights, &j->e->tune, &fb, err);
    if (st != LMS_OK) return st;
    const int32_t nl = j->req->n_labels;
    for (int32_t s = 0; s < b->n_score; s++) {
        memcpy(j->lp + (size_t)b->score_item[s] * nl, b->lp + (size_t)s * nl,
               (size_t)nl * sizeof(float));
        finish_item(j, b->score_item[s]);
    }
    int64_t real = prefix_rows;
    for (int32_t s = 0; s < b->n_segments; s++)
        real += b->seg_end[s] - b->seg_begin[s];
    j->res->computed_tokens += real;
    return emit_ready(j, err);
}

/* ---- algorithms ---------------------------------------------------------- */

/* Rows item i takes in a batch: its whole sequence when sequences run
 * independently, else the item alone (after a prefix). */
static int32_t item_rows(const score_state *j, int32_t i, item_span span)
{
    const lms_score_request *r = j->req;
    const int32_t len = r->items[i].len;
    return span == WHOLE_SEQUENCE ? len + (r->item_first ? r->query.len : j->prefix_len) : len;
}

static int32_t widest_item(const score_state *j, item_span span)
{
    int32_t widest = 0;
    for (int32_t i = 0; i < j->req->n_items; i++)
        if (item_rows(j, i, span) > widest) widest = item_rows(j, i, span);
    return widest;
}

/* Each sequence on its own, as its own segment: one per forward pass
 * (serial), or as many as max_packed_tokens rows hold (item_first, whose
 * sequences share no prefix). */
static lms_status run_independent(score_state *j, sequence_batching batching, lms_error *err)
{
    const lms_score_request *r = j->req;
    const int32_t max_seq = widest_item(j, WHOLE_SEQUENCE);
    int32_t cap = batching == ONE_PER_PASS || max_seq > j->e->opt.max_packed_tokens
                      ? max_seq
                      : j->e->opt.max_packed_tokens;
    batch_buf b;
    lms_status st = batch_init(&b, cap, r->n_items, r->n_labels, err);
    for (int32_t i = 0; i < r->n_items && st == LMS_OK;) {
        b.n_rows = b.n_segments = b.n_score = 0;
        do {
            const lms_tokens *it = &r->items[i];
            const lms_tokens *first = r->item_first ? it : &r->query;
            const lms_tokens *second = r->item_first ? &r->query : it;
            int32_t begin = b.n_rows;
            if (r->item_first) {
                put_rows(&b, first->ids, first->len, 0);
                put_rows(&b, second->ids, second->len, first->len);
            } else {
                put_rows(&b, j->prefix, j->prefix_len, 0);
                put_rows(&b, it->ids, it->len, j->prefix_len);
            }
            b.seg_begin[b.n_segments] = begin;
            b.seg_end[b.n_segments++] = b.n_rows;
            add_score(&b, b.n_rows - 1, i);
            i++;
        } while (batching == AS_MANY_AS_FIT && i < r->n_items &&
                 b.n_rows + item_rows(j, i, WHOLE_SEQUENCE) <= cap);
        st = run_batch(j, &b, 0, SEGMENT_RUNS, NULL, NULL, err);
    }
    batch_free(&b);
    return st;
}

/* Prefix rows then items as segments, in packs of at most max_packed_tokens
 * rows (a pack holds at least one item). */
static lms_status run_packed(score_state *j, segment_attention attention, lms_error *err)
{
    const lms_score_request *r = j->req;
    const int32_t p = j->prefix_len;
    const bool dense = attention == DENSE_MASK;
    const int32_t budget = dense && j->e->opt.dense_mask_max_tokens < j->e->opt.max_packed_tokens
                               ? j->e->opt.dense_mask_max_tokens
                               : j->e->opt.max_packed_tokens;
    /* the largest one-item pack */
    const int32_t need = p + widest_item(j, ITEM_ALONE);
    if (dense && need > j->e->opt.dense_mask_max_tokens)
        return lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, "dense_mask_too_large", "items",
                        "packed_dense needs a %d-token pack; its mask is limited to %d tokens",
                        need, j->e->opt.dense_mask_max_tokens);
    const int32_t cap = need > budget ? need : budget;
    batch_buf b;
    lms_status st = batch_init(&b, cap, r->n_items, r->n_labels, err);
    for (int32_t i = 0; i < r->n_items && st == LMS_OK;) {
        b.n_rows = b.n_segments = b.n_score = 0;
        put_rows(&b, j->prefix, p, 0);
        int32_t n_in_pack = 0;
        while (i < r->n_items) {
            const lms_tokens *it = &r->items[i];
            if (n_in_pack > 0 && b.n_rows + item_rows(j, i, ITEM_ALONE) > budget) break;
            if (it->len == 0) {
                add_score(&b, p - 1, i);
            } else {
                b.seg_begin[b.n_segments] = b.n_rows;
                put_rows(&b, it->ids, it->len, p);
                b.seg_end[b.n_segments++] = b.n_rows;
                add_score(&b, b.n_rows - 1, i);
            }
            n_in_pack++;
            i++;
        }
        st = run_batch(j, &b, p, attention, NULL, NULL, err);
    }
    batch_free(&b);
    return st;
}

/* The prefix's KV from the session, the cache, or a prefill pass that
 * computes and caches it. Empty items score at the prefix's last row: in the
 * prefill pass itself, or from the cached last hidden state. */
static lms_status prefill(score_state *j, prefix_cache_entry **entry, lms_error *err)
{
    const lms_score_request *r = j->req;
    lms_engine *e = j->e;
    const lms_model_config *c = &e->model->cfg;
    const int32_t p = j->prefix_len;
    batch_buf b;
    lms_status st = batch_init(&b, p, r->n_items, r->n_labels, err);
    if (st != LMS_OK) {
        batch_free(&b);
        return st;
    }
    for (int32_t i = 0; i < r->n_items; i++)
        if (r->items[i].len == 0) add_score(&b, p - 1, i);

    *entry = j->pinned ? j->pinned : prefix_cache_lookup(e->cache, j->prefix, p);
    if (*entry) {
        j->res->cached_tokens = p;
        const kv_prefix *kv = prefix_cache_kv(*entry);
        if (b.n_score)
            st = lm_head_label_logprobs(e->model, &e->weights->output, &e->tune.matmul,
                                        kv->last_hidden, NULL, 1, r->label_ids, r->n_labels, b.lp,
                                        err);
        for (int32_t s = 1; s < b.n_score && st == LMS_OK; s++)
            memcpy(b.lp + (size_t)s * r->n_labels, b.lp, (size_t)r->n_labels * sizeof(float));
        for (int32_t s = 0; s < b.n_score && st == LMS_OK; s++) {
            memcpy(j->lp + (size_t)b.score_item[s] * r->n_labels, b.lp + (size_t)s * r->n_labels,
                   (size_t)r->n_labels * sizeof(float));
            finish_item(j, b.score_item[s]);
        }
        if (st == LMS_OK) st = emit_ready(j, err);
        batch_free(&b);
        return st;
    }
    kv_prefix *kv = NULL;
    st = kv_prefix_create(c->n_layers, c->n_kv_heads * c->head_dim, c->d_model, p, e->tune.kv16,
                          &kv, err);
    if (st == LMS_OK) {
        put_rows(&b, j->prefix, p, 0);
        st = run_batch(j, &b, p, SEGMENT_RUNS, NULL, kv, err);
    }
    batch_free(&b);
    if (st != LMS_OK) {
        kv_prefix_free(kv);
        return st;
    }
    *entry = prefix_cache_insert(e->cache, j->prefix, p, kv);
    if (!*entry) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the prefix cache");
    return LMS_OK;
}

static lms_status run_prefill_extend(score_state *j, lms_error *err)
{
    const lms_score_request *r = j->req;
    const int32_t p = j->prefix_len;
    prefix_cache_entry *entry = NULL;
    lms_status st = LMS_OK;
    if (p > 0) st = prefill(j, &entry, err);
    if (st != LMS_OK) return st;
    const kv_prefix *kv = entry ? prefix_cache_kv(entry) : NULL;

    const int32_t widest = widest_item(j, ITEM_ALONE);
    const int32_t budget = j->e->opt.max_packed_tokens;
    const int32_t cap = widest > budget ? widest : budget;
    batch_buf b;
    st = batch_init(&b, cap, r->n_items, r->n_labels, err);
    for (int32_t i = 0; i < r->n_items && st == LMS_OK;) {
        b.n_rows = b.n_segments = b.n_score = 0;
        while (i < r->n_items) {
            const lms_tokens *it = &r->items[i];
            if (b.n_segments > 0 && b.n_rows + item_rows(j, i, ITEM_ALONE) > budget) break;
            i++;
            if (it->len == 0) continue; /* scored by the prefill */
            b.seg_begin[b.n_segments] = b.n_rows;
            put_rows(&b, it->ids, it->len, p);
            b.seg_end[b.n_segments++] = b.n_rows;
            add_score(&b, b.n_rows - 1, i - 1);
        }
        if (b.n_segments) st = run_batch(j, &b, 0, SEGMENT_RUNS, kv, NULL, err);
    }
    batch_free(&b);
    if (entry != j->pinned) prefix_cache_release(j->e->cache, entry);
    return st;
}

/* ---- entry point --------------------------------------------------------- */

static lms_status build_prefix(score_state *j, lms_error *err)
{
    const lms_score_request *r = j->req;
    const int32_t delim = j->e->opt.delimiter;
    j->prefix_len = r->item_first ? 0 : r->query.len + (delim >= 0 ? 1 : 0);
    j->prefix = malloc((size_t)(j->prefix_len + 1) * sizeof(int32_t));
    if (!j->prefix) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    if (!r->item_first) {
        if (r->query.len) memcpy(j->prefix, r->query.ids, (size_t)r->query.len * sizeof(int32_t));
        if (delim >= 0) j->prefix[r->query.len] = delim;
    }
    return LMS_OK;
}

static lms_algorithm choose(score_state *j, char *reason, size_t reason_size)
{
    const lms_score_request *r = j->req;
    lms_engine *e = j->e;
    if (r->item_first) {
        snprintf(reason, reason_size,
                 "item_first: sequences share no prefix, items run as independent sequences "
                 "batched up to %d tokens",
                 e->opt.max_packed_tokens);
        return LMS_ALGO_SERIAL;
    }
    lms_algorithm want = r->algorithm != LMS_ALGO_AUTO ? r->algorithm : e->opt.algorithm;
    if (want != LMS_ALGO_AUTO) {
        snprintf(reason, reason_size, "%s: requested", lms_algorithm_name(want));
        return want;
    }
    int32_t *lens = malloc((size_t)(r->n_items + 1) * sizeof *lens);
    if (!lens) {
        snprintf(reason, reason_size, "auto: no memory for the cost model, ran serial");
        return LMS_ALGO_SERIAL;
    }
    for (int32_t i = 0; i < r->n_items; i++)
        lens[i] = r->items[i].len;
    selector_input in = {
        .prefix_len = j->prefix_len,
        .n_items = r->n_items,
        .item_len = lens,
        .max_packed_tokens = e->opt.max_packed_tokens,
        .dense_mask_max_tokens = e->opt.dense_mask_max_tokens,
        .prefix_cached = prefix_cache_contains(e->cache, j->prefix, j->prefix_len),
    };
    selector_choice ch;
    selector_choose(&e->model->cfg, &in, &ch);
    free(lens);
    snprintf(reason, reason_size, "%s", ch.reason);
    return ch.best;
}

static lms_status score_run(lms_engine *e, const lms_score_request *req,
                            const lms_score_hooks *hooks, prefix_cache_entry *pinned,
                            lms_score_result *out, lms_error *err)
{
    memset(out, 0, sizeof *out);
    lms_status st = validate(e, req, err);
    if (st != LMS_OK) return st;
    score_state j = {.e = e, .req = req, .hooks = hooks, .res = out, .pinned = pinned};
    out->n_items = req->n_items;
    out->n_labels = req->n_labels;
    size_t n = (size_t)req->n_items * req->n_labels;
    out->scores = malloc((n ? n : 1) * sizeof(float));
    out->logprobs = malloc((n ? n : 1) * sizeof(float));
    j.lp = malloc((n ? n : 1) * sizeof(float));
    j.done = calloc((size_t)req->n_items + 1, 1);
    if (!out->scores || !out->logprobs || !j.lp || !j.done) {
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for %d items", req->n_items);
        goto out;
    }
    st = build_prefix(&j, err);
    if (st != LMS_OK) goto out;
    for (int32_t i = 0; i < req->n_items; i++)
        out->prompt_tokens +=
            (int64_t)j.prefix_len + req->items[i].len + (req->item_first ? req->query.len : 0);
    if (pinned && !req->item_first) {
        out->algorithm = LMS_ALGO_PREFILL_EXTEND;
        snprintf(out->algorithm_reason, sizeof out->algorithm_reason,
                 "session: items extend the query prefilled once for the stream");
    } else {
        out->algorithm = choose(&j, out->algorithm_reason, sizeof out->algorithm_reason);
    }
    if (req->n_items == 0) goto out;
    switch (out->algorithm) {
    case LMS_ALGO_SERIAL:
        st = run_independent(&j, req->item_first ? AS_MANY_AS_FIT : ONE_PER_PASS, err);
        break;
    case LMS_ALGO_PACKED_DENSE:
        st = run_packed(&j, DENSE_MASK, err);
        break;
    case LMS_ALGO_PACKED_SEGMENT:
        st = run_packed(&j, SEGMENT_RUNS, err);
        break;
    case LMS_ALGO_PREFILL_EXTEND:
        st = run_prefill_extend(&j, err);
        break;
    default:
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "algorithm", "unknown algorithm %d",
                      out->algorithm);
    }
out:
    free(j.prefix);
    free(j.lp);
    free(j.done);
    if (st != LMS_OK) lms_score_result_free(out);
    return st;
}

lms_status lms_engine_validate(const lms_engine *e, const lms_score_request *req, lms_error *err)
{
    return validate(e, req, err);
}

lms_status lms_engine_score(lms_engine *e, const lms_score_request *req,
                            const lms_score_hooks *hooks, lms_score_result *out, lms_error *err)
{
    return score_run(e, req, hooks, NULL, out, err);
}

/* ---- sessions ------------------------------------------------------------ */

struct lms_score_session {
    lms_engine *engine;
    lms_score_request header; /* query and labels point at the copies below */
    int32_t *query;
    int32_t *labels;
    prefix_cache_entry *pinned;
};

lms_status lms_score_session_begin(lms_engine *e, const lms_score_request *header,
                                   const lms_score_hooks *hooks, lms_score_session **out,
                                   lms_error *err)
{
    *out = NULL;
    lms_score_request h = *header;
    h.items = NULL;
    h.n_items = 0;
    lms_status st = validate(e, &h, err);
    if (st != LMS_OK) return st;
    /* validate measures sequences through their items; a session has none
     * yet, and its query alone (with an empty item) must fit. */
    const int32_t query_rows = h.query.len + (e->opt.delimiter >= 0 && !h.item_first ? 1 : 0);
    if (query_rows > e->opt.max_sequence_tokens)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "sequence_too_long", "query",
                        "query: %d tokens: the limit is %d", query_rows,
                        e->opt.max_sequence_tokens);
    lms_score_session *s = calloc(1, sizeof *s);
    int32_t *query = malloc((size_t)(h.query.len + 1) * sizeof(int32_t));
    int32_t *labels = malloc((size_t)h.n_labels * sizeof(int32_t));
    if (!s || !query || !labels) {
        free(s);
        free(query);
        free(labels);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for a session");
    }
    if (h.query.len) memcpy(query, h.query.ids, (size_t)h.query.len * sizeof(int32_t));
    memcpy(labels, h.label_ids, (size_t)h.n_labels * sizeof(int32_t));
    h.query.ids = query;
    h.label_ids = labels;
    s->engine = e;
    s->header = h;
    s->query = query;
    s->labels = labels;
    if (!h.item_first) {
        lms_score_result none = {0};
        score_state j = {.e = e, .req = &s->header, .hooks = hooks, .res = &none};
        st = build_prefix(&j, err);
        if (st == LMS_OK && j.prefix_len > 0) st = prefill(&j, &s->pinned, err);
        free(j.prefix);
    }
    if (st != LMS_OK) {
        lms_score_session_end(s);
        return st;
    }
    *out = s;
    return LMS_OK;
}

lms_status lms_score_session_score(lms_score_session *s, const lms_tokens *items, int32_t n_items,
                                   const lms_score_hooks *hooks, lms_score_result *out,
                                   lms_error *err)
{
    lms_score_request r = s->header;
    r.items = items;
    r.n_items = n_items;
    return score_run(s->engine, &r, hooks, s->pinned, out, err);
}

void lms_score_session_end(lms_score_session *s)
{
    if (!s) return;
    prefix_cache_release(s->engine->cache, s->pinned);
    free(s->query);
    free(s->labels);
    free(s);
}

void lms_score_result_free(lms_score_result *res)
{
    if (!res) return;
    free(res->scores);
    free(res->logprobs);
    res->scores = res->logprobs = NULL;
}
