/*
 * attention.c — segment-aware attention (see attention.h).
 *
 * The batch is cut into row blocks. A block is either a piece of the causal
 * prefix, a piece of one long segment, or several whole short segments. For a
 * block and one query head the work is:
 *
 *   S_shared = Q_block · [K_cached; K_prefix]ᵀ      one sgemm over all rows
 *   S_own    = Q_piece · K_ownᵀ                      one sgemm per piece
 *   softmax over each row's visible scores
 *   O_block  = P_shared · V_shared + P_own · V_own
 *
 * so no row ever touches a key it cannot see, and memory is O(block × keys)
 * per thread, never O(T²). Blocks run in parallel (OpenMP), each calling
 * single-threaded sgemm. Items stay bit-exact across batches because every
 * block starts at a row that is a multiple of the BLAS row period and its
 * own-key sgemms depend only on the item itself.
 *
 * The dense-mask mode is the baseline the design asks for: it materialises
 * the T×T visibility mask and computes every score through it with
 * deterministic dot products (position-invariant by construction).
 */
#include "attention.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "vec.h"

typedef struct {
    int32_t a, b; /* query rows [a, b) */
    int32_t own0; /* own keys are batch rows [own0, row] */
} attn_piece;

typedef struct {
    int32_t r0, r1;      /* rows computed (includes padding rows) */
    int32_t shared;      /* batch rows [0, shared) are visible to every piece */
    int32_t first_piece; /* pieces [first_piece, end_piece) */
    int32_t end_piece;
} attn_block;

struct attn_plan {
    attn_geometry geo;
    int32_t n_rows;
    int32_t cached;
    int32_t n_blocks, n_pieces;
    attn_block *blocks;
    attn_piece *pieces;
    int32_t max_rows;     /* rows of the largest block */
    int32_t max_own_keys; /* widest own-key span */
    int32_t max_shared;   /* most shared keys (cached included) */
    uint8_t *mask;        /* dense mode: [n_rows × n_rows], 1 = visible */
    int n_threads;
    size_t scratch_floats; /* per thread */
    float *scratch;        /* [n_threads × scratch_floats], reused by every layer */
};

static void add_block(attn_plan *p, int32_t r0, int32_t r1, int32_t shared)
{
    attn_block *b = &p->blocks[p->n_blocks++];
    b->r0 = r0;
    b->r1 = r1;
    b->shared = shared;
    b->first_piece = p->n_pieces;
    b->end_piece = p->n_pieces;
    if (r1 - r0 > p->max_rows) p->max_rows = r1 - r0;
    if (shared + p->cached > p->max_shared) p->max_shared = shared + p->cached;
}

static void add_piece(attn_plan *p, int32_t a, int32_t b, int32_t own0)
{
    attn_piece *pc = &p->pieces[p->n_pieces++];
    pc->a = a;
    pc->b = b;
    pc->own0 = own0;
    p->blocks[p->n_blocks - 1].end_piece = p->n_pieces;
    if (b - own0 > p->max_own_keys) p->max_own_keys = b - own0;
}

static lms_status check_layout(const attn_layout *l, lms_error *err)
{
    if (l->n_rows <= 0 || l->prefix_rows < 0 || l->prefix_rows > l->n_rows || l->n_segments < 0)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "attention: bad layout sizes");
    int32_t prev_end = l->prefix_rows;
    for (int32_t s = 0; s < l->n_segments; s++) {
        if (l->seg_begin[s] < prev_end || l->seg_end[s] <= l->seg_begin[s] ||
            l->seg_end[s] > l->n_rows)
            return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "attention: bad segment %d", s);
        prev_end = l->seg_end[s];
    }
    return LMS_OK;
}

static void build_mask(attn_plan *p, const attn_layout *l)
{
    int32_t t = l->n_rows;
    memset(p->mask, 0, (size_t)t * t);
    for (int32_t r = 0; r < l->prefix_rows; r++)
        memset(p->mask + (size_t)r * t, 1, r + 1);
    for (int32_t s = 0; s < l->n_segments; s++)
        for (int32_t r = l->seg_begin[s]; r < l->seg_end[s]; r++) {
            uint8_t *row = p->mask + (size_t)r * t;
            memset(row, 1, l->prefix_rows);
            memset(row + l->seg_begin[s], 1, r - l->seg_begin[s] + 1);
        }
}

/* Floats of scratch one thread needs: the dense mode's score row and Kᵀ, or
 * the segment mode's block scores. */
static size_t thread_scratch_floats(const attn_plan *p)
{
    const size_t mc = (size_t)p->geo.block_rows, hd = (size_t)p->geo.head_dim;
    if (p->mask) return (size_t)(p->cached + p->n_rows) * (1 + hd);
    return mc * ((size_t)p->max_shared + hd) + (size_t)p->max_rows * (size_t)p->max_own_keys;
}

/* Allocates the threads' scratch and hands the plan out, or frees it. Once
 * per plan, not per layer: a fresh multi-megabyte buffer per layer came back
 * as new zeroed pages every time (4% of an extend's time in the kernel's
 * page clearing). */
static lms_status finish_plan(attn_plan *p, attn_plan **out, lms_error *err)
{
    p->n_threads = omp_get_max_threads();
    p->scratch_floats = thread_scratch_floats(p);
    p->scratch = lms_alloc((size_t)p->n_threads * p->scratch_floats * sizeof(float));
    if (!p->scratch) {
        attn_plan_free(p);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for attention scratch");
    }
    *out = p;
    return LMS_OK;
}

lms_status attn_plan_create(const attn_layout *l, const attn_geometry *geo, int32_t cached_rows,
                            attn_plan **out, lms_error *err)
{
    *out = NULL;
    lms_status st = check_layout(l, err);
    if (st != LMS_OK) return st;
    attn_plan *p = calloc(1, sizeof *p);
    if (!p) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for an attention plan");
    p->geo = *geo;
    p->n_rows = l->n_rows;
    p->cached = cached_rows;
    const int32_t br = geo->block_rows;
    /* Upper bounds: prefix pieces, plus per segment its pieces (one more
     * block per segment at most, as blocks never split a short segment). */
    int64_t max_items = l->prefix_rows / br + 2;
    for (int32_t s = 0; s < l->n_segments; s++)
        max_items += (l->seg_end[s] - l->seg_begin[s]) / br + 2;
    p->blocks = calloc(max_items, sizeof *p->blocks);
    p->pieces = calloc(max_items, sizeof *p->pieces);
    if (!p->blocks || !p->pieces) goto nomem;

    if (l->dense_mask) {
        p->mask = lms_alloc((size_t)l->n_rows * l->n_rows);
        if (!p->mask) goto nomem;
        build_mask(p, l);
        for (int32_t r0 = 0; r0 < l->n_rows; r0 += br) {
            int32_t r1 = r0 + br < l->n_rows ? r0 + br : l->n_rows;
            add_block(p, r0, r1, 0);
        }
        p->max_shared = l->n_rows + cached_rows;
        return finish_plan(p, out, err);
    }

    /* The causal prefix, in blocks of br rows; the last one runs up to the
     * first segment so that every block's row count is period-aligned. */
    int32_t first_seg_row = l->n_segments ? l->seg_begin[0] : l->n_rows;
    for (int32_t r0 = 0; r0 < l->prefix_rows; r0 += br) {
        int32_t r1 = r0 + br < l->prefix_rows ? r0 + br : l->prefix_rows;
        add_block(p, r0, r1 < l->prefix_rows ? r1 : first_seg_row, 0);
        add_piece(p, r0, r1, 0);
    }
    /* Segments: short ones grouped whole into blocks of up to br rows, long
     * ones cut into pieces of br rows, each piece its own block. */
    for (int32_t s = 0; s < l->n_segments;) {
        int32_t b0 = l->seg_begin[s];
        int32_t len = l->seg_end[s] - b0;
        if (len > br) {
            for (int32_t a = b0; a < l->seg_end[s]; a += br) {
                int32_t b = a + br < l->seg_end[s] ? a + br : l->seg_end[s];
                int32_t r1 = b < l->seg_end[s]       ? b
                             : s + 1 < l->n_segments ? l->seg_begin[s + 1]
                                                     : l->n_rows;
                add_block(p, a, r1, l->prefix_rows);
                add_piece(p, a, b, b0);
            }
            s++;
            continue;
        }
        int32_t e = s;
        while (e + 1 < l->n_segments && l->seg_end[e + 1] - b0 <= br &&
               l->seg_end[e + 1] - l->seg_begin[e + 1] <= br)
            e++;
        int32_t r1 = e + 1 < l->n_segments ? l->seg_begin[e + 1] : l->n_rows;
        add_block(p, b0, r1, l->prefix_rows);
        for (int32_t i = s; i <= e; i++)
            add_piece(p, l->seg_begin[i], l->seg_end[i], l->seg_begin[i]);
        s = e + 1;
    }
    return finish_plan(p, out, err);
nomem:
    attn_plan_free(p);
    return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for an attention plan");
}

void attn_plan_free(attn_plan *p)
{
    if (!p) return;
    free(p->blocks);
    free(p->pieces);
    lms_free(p->mask);
    lms_free(p->scratch);
    free(p);
}

typedef struct {
    const float *q, *k, *v, *ck, *cv;
    float *out;
    int32_t q_stride, kv_stride;
    float scale;
} attn_io;

/* One block, one query head h (kv head g), segment mode. */
static void block_head_segment(const attn_plan *p, const attn_block *blk, const attn_io *io,
                               int32_t h, int32_t g, float *scratch)
{
    /* Every product over the shared keys has exactly mc rows, whatever the
     * block holds: OpenBLAS picks kernels by shape, so a call whose row count
     * followed the items would round an item differently when another item
     * changes length. Rows past the block are read (the q buffer has mc
     * spare rows) and ignored. */
    const int32_t hd = p->geo.head_dim, mc = p->geo.block_rows;
    const int32_t n_sh = p->cached + blk->shared;
    const float *qb = io->q + (size_t)blk->r0 * io->q_stride + (size_t)h * hd;
    float *s_sh = scratch;                  /* [mc × n_sh] */
    float *o_sh = s_sh + (size_t)mc * n_sh; /* [mc × hd] */
    float *s_own = o_sh + (size_t)mc * hd;  /* per piece [rows × own keys] */
    const size_t kv_off = (size_t)g * hd;

    for (int32_t r = blk->r0; r < blk->r1; r++)
        memset(io->out + (size_t)r * io->q_stride + (size_t)h * hd, 0, hd * sizeof(float));
    if (p->cached)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mc, p->cached, hd, io->scale, qb,
                    io->q_stride, io->ck + kv_off, io->kv_stride, 0.0f, s_sh, n_sh);
    if (blk->shared)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, mc, blk->shared, hd, io->scale, qb,
                    io->q_stride, io->k + kv_off, io->kv_stride, 0.0f, s_sh + p->cached, n_sh);

    /* Rows that belong to no piece (alignment padding, rows past the block)
     * must not contribute: their shared scores are zeroed. */
    int32_t next = 0;
    size_t own_at = 0;
    for (int32_t pi = blk->first_piece; pi < blk->end_piece; pi++) {
        const attn_piece *pc = &p->pieces[pi];
        for (; next < pc->a - blk->r0 && n_sh; next++)
            memset(s_sh + (size_t)next * n_sh, 0, n_sh * sizeof(float));
        next = pc->b - blk->r0;
        const int32_t rows = pc->b - pc->a, n_own = pc->b - pc->own0;
        float *so = s_own + own_at;
        own_at += (size_t)rows * n_own;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, rows, n_own, hd, io->scale,
                    io->q + (size_t)pc->a * io->q_stride + (size_t)h * hd, io->q_stride,
                    io->k + (size_t)pc->own0 * io->kv_stride + kv_off, io->kv_stride, 0.0f, so,
                    n_own);
        for (int32_t i = 0; i < rows; i++) {
            float *sh = s_sh + (size_t)(pc->a - blk->r0 + i) * n_sh;
            float *own = so + (size_t)i * n_own;
            int32_t visible = pc->a + i - pc->own0 + 1;
            float mx = vec_max(own, visible);
            float mx_sh = vec_max(sh, n_sh);
            if (mx_sh > mx) mx = mx_sh;
            double sum = vec_exp_shifted(sh, n_sh, mx) + vec_exp_shifted(own, visible, mx);
            float inv = (float)(1.0 / sum);
            vec_scale(sh, n_sh, inv);
            vec_scale(own, visible, inv);
            memset(own + visible, 0, (size_t)(n_own - visible) * sizeof(float));
        }
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, hd, n_own, 1.0f, so, n_own,
                    io->v + (size_t)pc->own0 * io->kv_stride + kv_off, io->kv_stride, 1.0f,
                    io->out + (size_t)pc->a * io->q_stride + (size_t)h * hd, io->q_stride);
    }
    if (!n_sh) return;
    for (; next < mc; next++)
        memset(s_sh + (size_t)next * n_sh, 0, n_sh * sizeof(float));
    if (p->cached)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mc, hd, p->cached, 1.0f, s_sh, n_sh,
                    io->cv + kv_off, io->kv_stride, 0.0f, o_sh, hd);
    if (blk->shared)
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, mc, hd, blk->shared, 1.0f,
                    s_sh + p->cached, n_sh, io->v + kv_off, io->kv_stride, p->cached ? 1.0f : 0.0f,
                    o_sh, hd);
    for (int32_t pi = blk->first_piece; pi < blk->end_piece; pi++)
        for (int32_t r = p->pieces[pi].a; r < p->pieces[pi].b; r++)
            vec_add(io->out + (size_t)r * io->q_stride + (size_t)h * hd,
                    o_sh + (size_t)(r - blk->r0) * hd, hd);
}

/* Kᵀ of kv head g over all keys (cached, then batch): [head_dim × keys], so
 * that a row's scores are head_dim axpys along the keys — vectorised across
 * keys, and each score still the same sequence of operations wherever its
 * key sits. */
static void transpose_keys(const attn_plan *p, const attn_io *io, int32_t g, float *kt)
{
    const int32_t hd = p->geo.head_dim, c = p->cached, n = c + p->n_rows;
    for (int32_t j = 0; j < n; j++) {
        const float *kj =
            (j < c ? io->ck + (size_t)j * io->kv_stride : io->k + (size_t)(j - c) * io->kv_stride) +
            (size_t)g * hd;
        for (int32_t d = 0; d < hd; d++)
            kt[(size_t)d * n + j] = kj[d];
    }
}

/* One block, one head, through the materialised mask: every score of the
 * row is computed, then masked. */
static void block_head_dense(const attn_plan *p, const attn_block *blk, const attn_io *io,
                             int32_t h, int32_t g, const float *kt, float *s)
{
    const int32_t hd = p->geo.head_dim, t = p->n_rows, c = p->cached, n = c + t;
    for (int32_t r = blk->r0; r < blk->r1; r++) {
        const float *qr = io->q + (size_t)r * io->q_stride + (size_t)h * hd;
        float *orow = io->out + (size_t)r * io->q_stride + (size_t)h * hd;
        const uint8_t *mrow = p->mask + (size_t)r * t;
        memset(s, 0, (size_t)n * sizeof(float));
        for (int32_t d = 0; d < hd; d++)
            vec_axpy(s, qr[d], kt + (size_t)d * n, n);
        int any = 0;
        for (int32_t j = 0; j < n; j++) {
            int visible = j < c || mrow[j - c];
            any |= visible && j >= c;
            s[j] = visible ? s[j] * io->scale : -INFINITY;
        }
        memset(orow, 0, hd * sizeof(float));
        if (!any) continue; /* a padding row */
        double sum = vec_exp_shifted(s, n, vec_max(s, n));
        vec_scale(s, n, (float)(1.0 / sum));
        /* A masked key's probability is exactly 0 and adding ±0 to an
         * accumulator that starts at +0 never changes it: skipping those keys
         * gives the same bits as summing over all of them. */
        for (int32_t j = 0; j < n; j++) {
            if (s[j] == 0.0f) continue;
            const float *vj = j < c ? io->cv + (size_t)j * io->kv_stride
                                    : io->v + (size_t)(j - c) * io->kv_stride;
            vec_axpy(orow, s[j], vj + (size_t)g * hd, hd);
        }
    }
}

void attn_run(const attn_plan *p, const float *q, const float *k, const float *v, const float *ck,
              const float *cv, float *out)
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
    const size_t per_thread = p->scratch_floats;
    const int64_t n_work = (int64_t)p->n_blocks * geo->n_kv_heads;
    /* Always inside a parallel region, however small the batch: OpenBLAS
     * runs single-threaded there, and a threaded call of the same shape can
     * round differently (seen with the Haswell kernel at 384 rows), so going
     * parallel only above some total work would let the other items decide
     * how an item's shared-key products are computed. */
#pragma omp parallel for schedule(dynamic, 1) num_threads(p->n_threads)
    for (int64_t w = 0; w < n_work; w++) {
        const attn_block *blk = &p->blocks[w / geo->n_kv_heads];
        const int32_t g = (int32_t)(w % geo->n_kv_heads);
        float *mine = p->scratch + (size_t)omp_get_thread_num() * per_thread;
        if (p->mask) {
            float *kt = mine + (size_t)(p->cached + p->n_rows);
            transpose_keys(p, &io, g, kt);
            for (int32_t h = g * group; h < (g + 1) * group; h++)
                block_head_dense(p, blk, &io, h, g, kt, mine);
        } else {
            for (int32_t h = g * group; h < (g + 1) * group; h++)
                block_head_segment(p, blk, &io, h, g, mine);
        }
    }
}
