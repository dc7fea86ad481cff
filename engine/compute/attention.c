/*
 * attention.c — segment-aware attention (see attention.h), block by block
 * over a plan (attention_plan.h). For a block and one query head the work is:
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
#include <string.h>

#include "attention_plan.h"
#include "vec.h"

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
