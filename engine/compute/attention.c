/*
 * attention.c — segment-aware attention (see attention.h), block by block
 * over a plan (attention_plan.h). Per layer:
 *
 *   1. Kᵀ of every key (cached rows, then the batch's) packed in panels of
 *      32 keys per KV head, so that a row's scores over any run of keys are
 *      the f32 kernel's (kernels.h): score = chain of fmas over head_dim;
 *      and V in the same key order, by panels of 32 of head_dim.
 *   2. Per block and query head, per group of pieces on consecutive rows:
 *      the scores over the shared keys (cached and prefix) for all the
 *      group's rows, and over each piece's own keys, laid out in key order
 *      in one row; scaled by 1/sqrt(head_dim); masked to the keys the row
 *      sees; softmax (vec.h: its sum's order is fixed by the layout); then
 *      the output, the chain of fmas over the row's keys in the same order
 *      — cached values, prefix values (all the group's rows), own values
 *      (piece by piece), each run resuming the chain.
 *
 * No row touches a key it cannot see, memory is O(rows × keys) per thread,
 * never O(T²), and the blocks run in parallel (OpenMP). The dense-mask mode
 * is the baseline the design asks for: the T×T visibility mask, every score
 * of a row computed, then the visible ones gathered in key order — the same
 * layout, so the same bits as the segment mode.
 */
#include "attention.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "attention_plan.h"
#include "model.h"
#include "vec.h"

typedef struct {
    const float *q, *k, *v;
    const void *ck, *cv; /* f32, or f16 bits with geo.kv16 */
    float *out;
    int32_t q_stride, kv_stride;
    float scale;
} attn_io;

/* Keys [32p, 32p + 32) of KV head g (cached rows first, then the batch;
 * zeros past the last key): Kᵀ into keys_t, and V into values by panels of
 * 32 of head_dim, so that P · V streams contiguous bytes per key where the
 * rows of V lie a whole KV width apart (4 KiB on Qwen3-0.6B: every key in
 * the same L1 set). With kv16 the batch's keys and values are rounded to
 * f16 here, the cached ones already are, and both are widened back to f32
 * (exactly): the f32 kernel then multiplies the f16 values, the same
 * chains as the 16-bit kernel's without widening each panel again for
 * every group of rows. */
static void pack_kv(const attn_plan *p, const attn_io *io, int32_t g, int32_t panel)
{
    const int32_t hd = p->geo.head_dim, c = p->cached, n = c + p->n_rows;
    const size_t n_keys = (size_t)p->key_panels * 32, first = (size_t)g * p->value_panels;
    float *kt = p->keys_t + ((size_t)g * p->key_panels + panel) * hd * 32, *values = p->values;
    const w16_kernels *kv16 = p->geo.kv16;
    uint16_t k16[LMS_MAX_HEAD_DIM], v16[LMS_MAX_HEAD_DIM];
    float kw[LMS_MAX_HEAD_DIM], vw[LMS_MAX_HEAD_DIM];
    for (int32_t j = 0; j < 32; j++) {
        const int32_t key = panel * 32 + j;
        const size_t at = (size_t)(key < c ? key : key - c) * io->kv_stride + (size_t)g * hd;
        const float *k = NULL, *v = NULL;
        if (key < n && !kv16) {
            k = key < c ? (const float *)io->ck + at : io->k + at;
            v = key < c ? (const float *)io->cv + at : io->v + at;
        } else if (key < n) {
            const uint16_t *kh = k16, *vh = v16;
            if (key < c) {
                kh = (const uint16_t *)io->ck + at;
                vh = (const uint16_t *)io->cv + at;
            } else {
                kv16->to_f16(io->k + at, k16, (size_t)hd);
                kv16->to_f16(io->v + at, v16, (size_t)hd);
            }
            kv16->to_f32(kh, kw, (size_t)hd);
            kv16->to_f32(vh, vw, (size_t)hd);
            k = kw;
            v = vw;
        }
        for (int32_t d = 0; d < hd; d++)
            kt[(size_t)d * 32 + j] = k ? k[d] : 0.0f;
        for (int32_t d = 0; d < hd; d++)
            values[((first + d / 32) * n_keys + key) * 32 + d % 32] = v ? v[d] : 0.0f;
    }
}

/* The f32 kernel over rows [0, n_rows) of x (row i at x + i·ldx), in
 * groups of the kernel's rows per call, against the panel at element w of
 * keys_t or values (32 columns a row): y row i at y + i·ldy. */
static void kernel_rows(const attn_plan *p, const float *x, size_t ldx, int32_t n_rows, int32_t k,
                        const float *panels, size_t w, float *y, size_t ldy, int32_t n_cols,
                        bool resume)
{
    const f32_kernels *f32 = p->geo.f32;
    const kernel_mode mode = resume ? KERNEL_RESUME : KERNEL_STORE;
    for (int32_t r = 0; r < n_rows; r += f32->rows) {
        const float *rows[KERNEL_MAX_ROWS];
        for (int32_t i = 0; i < f32->rows; i++)
            rows[i] = x + (size_t)(r + i < n_rows ? r + i : n_rows - 1) * ldx;
        const int32_t n = n_rows - r < f32->rows ? n_rows - r : f32->rows;
        f32->fn(rows, k, panels + w, 32, y + (size_t)r * ldy, ldy, n, n_cols, mode);
    }
}

/* s[i][j] = q_i · key (first + j) for rows i < n_rows and keys j < n_keys,
 * key first a multiple of 32 (a panel boundary). */
static void scores(const attn_plan *p, const float *q, size_t ldq, int32_t n_rows, int32_t g,
                   int32_t first, int32_t n_keys, float *s, size_t lds)
{
    const int32_t hd = p->geo.head_dim;
    for (int32_t j = 0; j < n_keys; j += 32) {
        const size_t panel = ((size_t)g * p->key_panels + (first + j) / 32) * hd * 32;
        kernel_rows(p, q, ldq, n_rows, hd, p->keys_t, panel, s + j, lds,
                    n_keys - j < 32 ? n_keys - j : 32, false);
    }
}

/* out rows (+= in the chain) P · V over keys [first, first + n_keys) of
 * KV head g: resumes each output element's chain when resume. */
static void weighted_values(const attn_plan *p, const attn_io *io, const float *prob, size_t ldp,
                            int32_t n_rows, int32_t g, int32_t first, int32_t n_keys, float *out,
                            bool resume)
{
    const int32_t hd = p->geo.head_dim;
    const size_t n_panel_keys = (size_t)p->key_panels * 32;
    for (int32_t c = 0; c < hd; c += 32) {
        const size_t v = (((size_t)g * p->value_panels + c / 32) * n_panel_keys + first) * 32;
        kernel_rows(p, prob, ldp, n_rows, n_keys, p->values, v, out + c, (size_t)io->q_stride,
                    hd - c < 32 ? hd - c : 32, resume);
    }
}

/* Softmax in place over the first `visible` of a row's scores (already
 * scaled); the rest of the row's n entries become 0. */
static void softmax_visible(const vec_kernels *vec, float *s, int32_t visible, int32_t n)
{
    const float mx = vec->max(s, visible);
    const double sum = vec->exp_shifted(s, visible, mx);
    vec->scale(s, visible, (float)(1.0 / sum));
    memset(s + visible, 0, (size_t)(n - visible) * sizeof *s);
}

/* Rows' outputs (at out, q_stride apart) from their probabilities over
 * the shared keys: the cached ones, then the batch's first n_prefix
 * (prob's first c + n_prefix columns). */
static void attend_shared(const attn_plan *p, const attn_io *io, const float *prob, size_t ldp,
                          int32_t n_rows, int32_t g, int32_t n_prefix, float *out)
{
    const int32_t c = p->cached;
    if (c) weighted_values(p, io, prob, ldp, n_rows, g, 0, c, out, false);
    if (n_prefix) weighted_values(p, io, prob + c, ldp, n_rows, g, c, n_prefix, out, c > 0);
}

/* One block, one query head h (kv head g), segment mode. The pieces on
 * consecutive rows (a block of short segments packed tightly) go as one
 * group: the scores over their shared keys and the shared values' part of
 * P · V in one pass of the kernels over all the group's rows (pieces one
 * by one would leave each piece's last call of the kernel with spare rows:
 * 24 computed for an item of 20), then each piece's own keys. A row's
 * scores, softmax and chains are the same whatever its group. */
static void block_head_segment(const attn_plan *p, const attn_block *blk, const attn_io *io,
                               int32_t h, int32_t g, float *scratch)
{
    const int32_t hd = p->geo.head_dim, c = p->cached, n_sh = c + blk->shared;
    const size_t q_stride = (size_t)io->q_stride;
    for (int32_t r = blk->r0; r < blk->r1; r++)
        memset(io->out + (size_t)r * q_stride + (size_t)h * hd, 0, hd * sizeof(float));
    for (int32_t first = blk->first_piece, end; first < blk->end_piece; first = end) {
        int32_t max_own = 0;
        for (end = first; end < blk->end_piece; end++) {
            const attn_piece *pc = &p->pieces[end];
            if (end > first && pc->a != pc[-1].b) break;
            if (pc->b - pc->own0 > max_own) max_own = pc->b - pc->own0;
        }
        const int32_t a = p->pieces[first].a, rows = p->pieces[end - 1].b - a;
        const size_t ld = (size_t)(n_sh + max_own);
        float *s = scratch, *own = scratch + (size_t)rows * ld;
        float *out = io->out + (size_t)a * q_stride + (size_t)h * hd;
        const float *q = io->q + (size_t)a * q_stride + (size_t)h * hd;
        scores(p, q, q_stride, rows, g, 0, n_sh, s, ld);
        for (int32_t pi = first; pi < end; pi++) {
            const attn_piece *pc = &p->pieces[pi];
            const int32_t n_rows = pc->b - pc->a, n_own = pc->b - pc->own0;
            const int32_t own_first = (c + pc->own0) / 32 * 32, skew = c + pc->own0 - own_first;
            const size_t ld_own = (size_t)(skew + n_own + 31) / 32 * 32;
            scores(p, q + (size_t)(pc->a - a) * q_stride, q_stride, n_rows, g, own_first,
                   skew + n_own, own, ld_own);
            for (int32_t i = 0; i < n_rows; i++) {
                float *row = s + (size_t)(pc->a - a + i) * ld;
                memcpy(row + n_sh, own + (size_t)i * ld_own + skew, (size_t)n_own * sizeof *row);
                const int32_t visible = n_sh + pc->a + i - pc->own0 + 1;
                p->geo.vec->scale(row, visible, io->scale);
                softmax_visible(p->geo.vec, row, visible, (int32_t)ld);
            }
        }
        attend_shared(p, io, s, ld, rows, g, blk->shared, out);
        for (int32_t pi = first; pi < end; pi++) {
            const attn_piece *pc = &p->pieces[pi];
            weighted_values(p, io, s + (size_t)(pc->a - a) * ld + n_sh, ld, pc->b - pc->a, g,
                            c + pc->own0, pc->b - pc->own0, out + (size_t)(pc->a - a) * q_stride,
                            n_sh > 0);
        }
    }
}

/* One block, one head, through the materialised mask: every score of a row
 * over all keys, then its visible ones gathered in key order. */
static void block_head_dense(const attn_plan *p, const attn_block *blk, const attn_io *io,
                             int32_t h, int32_t g, float *scratch)
{
    const int32_t hd = p->geo.head_dim, t = p->n_rows, c = p->cached, n = c + t;
    const int32_t rows = blk->r1 - blk->r0;
    float *s = scratch, *compact = scratch + (size_t)rows * n;
    const float *q = io->q + (size_t)blk->r0 * io->q_stride + (size_t)h * hd;
    scores(p, q, (size_t)io->q_stride, rows, g, 0, n, s, (size_t)n);
    for (int32_t i = 0; i < rows; i++) {
        float *row = s + (size_t)i * n;
        const uint8_t *mask = p->mask + (size_t)(blk->r0 + i) * t;
        int32_t visible = 0;
        for (int32_t j = 0; j < n; j++)
            if (j < c || mask[j - c]) compact[visible++] = row[j];
        if (visible == c) { /* a padding row: it sees no row of the batch */
            memset(row, 0, (size_t)n * sizeof *row);
            continue;
        }
        p->geo.vec->scale(compact, visible, io->scale);
        softmax_visible(p->geo.vec, compact, visible, visible);
        for (int32_t j = 0, next = 0; j < n; j++)
            row[j] = j < c || mask[j - c] ? compact[next++] : 0.0f;
    }
    float *out = io->out + (size_t)blk->r0 * io->q_stride + (size_t)h * hd;
    attend_shared(p, io, s, (size_t)n, rows, g, 0, out);
    weighted_values(p, io, s + c, (size_t)n, rows, g, c, t, out, c > 0);
}

void attn_run(const attn_plan *p, const float *q, const float *k, const float *v, const void *ck,
              const void *cv, float *out)
{
    const attn_geometry *geo = &p->geo;
    const int32_t group = geo->n_heads / geo->n_kv_heads;
    const attn_io io = {
        .q = q,
        .k = k,
        .v = v,
        .ck = ck,
        .cv = cv,
        .out = out,
        .q_stride = geo->n_heads * geo->head_dim,
        .kv_stride = geo->n_kv_heads * geo->head_dim,
        .scale = 1.0f / sqrtf((float)geo->head_dim),
    };
    const int64_t n_panels = (int64_t)geo->n_kv_heads * p->key_panels;
#pragma omp parallel for schedule(static) num_threads(p->n_threads)
    for (int64_t w = 0; w < n_panels; w++)
        pack_kv(p, &io, (int32_t)(w / p->key_panels), (int32_t)(w % p->key_panels));
    const size_t per_thread = p->scratch_floats;
    const int64_t n_work = (int64_t)p->n_blocks * geo->n_kv_heads;
#pragma omp parallel for schedule(dynamic, 1) num_threads(p->n_threads)
    for (int64_t w = 0; w < n_work; w++) {
        const attn_block *blk = &p->blocks[w / geo->n_kv_heads];
        const int32_t g = (int32_t)(w % geo->n_kv_heads);
        float *mine = p->scratch + (size_t)omp_get_thread_num() * per_thread;
        for (int32_t h = g * group; h < (g + 1) * group; h++) {
            if (p->mask)
                block_head_dense(p, blk, &io, h, g, mine);
            else
                block_head_segment(p, blk, &io, h, g, mine);
        }
    }
}
