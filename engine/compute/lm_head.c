/*
 * lm_head.c — the end of a forward pass for the rows that are scored: final
 * RMSNorm, the LM head (a logit for every vocabulary entry) and the
 * log-softmax, of which only the label columns are kept.
 *
 * A scoring pass has few score rows (one per item) against a vocabulary of
 * 32k-152k entries, so the head is bound by reading the output matrix W
 * (151,936 × 1,024 floats, 622 MB, for Qwen3-0.6B). One sgemm would copy W
 * into OpenBLAS's packed layout on every call, reading it twice. Here each
 * chunk of score rows reads W once, straight from
 * the model, in vocabulary blocks spread over the threads; a block's logits
 * stay in the thread's cache, where the softmax's max and exponential sum
 * are taken at once. The per-block sums are combined in block order, so a
 * row's result depends neither on the thread count nor on the other rows.
 */
#include "lm_head.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "alloc.h"
#include "clones.h"
#include "vec.h"

/* Vocabulary entries per block: one block's logits for a chunk of rows
 * (chunk × VOCAB_BLOCK floats) stay in L2 while its softmax terms are taken.
 * Results depend on this constant (the softmax sum is folded per block). */
#define VOCAB_BLOCK 1024

/* A logit is a dot product kept in LANES partial sums (element k goes to
 * lane k % LANES) folded in a fixed tree: the same operations for every
 * (row, vocabulary entry) pair, whatever tile or clone computes it. */
#define LANES 16
typedef float lanes __attribute__((vector_size(LANES * sizeof(float))));

/* A tile: TILE_ROWS score rows against TILE_VOCAB rows of W, 8 independent
 * accumulators, enough to hide the add latency. */
#define TILE_ROWS  4
#define TILE_VOCAB 4
#define TILE       (TILE_ROWS * TILE_VOCAB)
_Static_assert(TILE % 8 == 0, "fold_8 folds a tile's accumulators");

/* W rows reused from L2 across a chunk's row tiles: block_logits walks a
 * vocabulary block in slices of about this many bytes of W. */
#define W_SLICE_BYTES (96 * 1024)

/* Score rows per pass over W: as many as fit in about this many bytes (the
 * row tiles come back to them for every W slice, from L2), within
 * [CHUNK_MIN_ROWS, CHUNK_MAX_ROWS]: past that the tiles' rows no longer
 * stay in L2 beside the W slice they are multiplied by. */
#define CHUNK_BYTES    (256 * 1024)
#define CHUNK_MIN_ROWS 16
#define CHUNK_MAX_ROWS 64

/* The tile's helpers must be inlined into each clone of block_logits, or
 * they run as baseline x86-64 code. */
#define KERNEL static inline __attribute__((always_inline))

/* Vectors go by pointer: passing one by value changes the ABI between the
 * clones. A short load (n < LANES, the end of a row) fills the rest with
 * zeros: adding +0 leaves a lane as it is. */
KERNEL void load_lanes(lanes *v, const float *p, int32_t n)
{
    if (n == LANES) {
        memcpy(v, p, sizeof *v);
    } else {
        memset(v, 0, sizeof *v);
        memcpy(v, p, (size_t)n * sizeof(float));
    }
}

/* Folds 8 accumulators at once, each in the fixed tree lane l += lane
 * l + w for w = 8, 4, 2, 1, with whole-vector shuffles and adds:
 * out[i] = the sum of acc[i]'s lanes. */
KERNEL void fold_8(const lanes acc[8], float out[8])
{
    lanes b[4], c[2], d;
    for (int i = 0; i < 4; i++) /* w = 8: [acc 2i (8 lanes), acc 2i+1 (8)] */
        b[i] = __builtin_shufflevector(acc[2 * i], acc[2 * i + 1], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17,
                                       18, 19, 20, 21, 22, 23) +
               __builtin_shufflevector(acc[2 * i], acc[2 * i + 1], 8, 9, 10, 11, 12, 13, 14, 15, 24,
                                       25, 26, 27, 28, 29, 30, 31);
    for (int i = 0; i < 2; i++) /* w = 4: 4 lanes each of acc 4i .. 4i+3 */
        c[i] = __builtin_shufflevector(b[2 * i], b[2 * i + 1], 0, 1, 2, 3, 8, 9, 10, 11, 16, 17, 18,
                                       19, 24, 25, 26, 27) +
               __builtin_shufflevector(b[2 * i], b[2 * i + 1], 4, 5, 6, 7, 12, 13, 14, 15, 20, 21,
                                       22, 23, 28, 29, 30, 31);
    /* w = 2: 2 lanes each of acc 0 .. 7 */
    d = __builtin_shufflevector(c[0], c[1], 0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21, 24, 25, 28,
                                29) +
        __builtin_shufflevector(c[0], c[1], 2, 3, 6, 7, 10, 11, 14, 15, 18, 19, 22, 23, 26, 27, 30,
                                31);
    /* w = 1 */
    lanes e =
        d + __builtin_shufflevector(d, d, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13, 12, 15, 14);
    float lane[LANES];
    memcpy(lane, &e, sizeof lane);
    for (int i = 0; i < 8; i++)
        out[i] = lane[2 * i];
}

/* acc[t·TILE_VOCAB + r] += h[t][k..k+n) · w[r][k..k+n), lane by lane. */
KERNEL void dot_step(lanes acc[TILE], const float *const h[TILE_ROWS],
                     const float *const w[TILE_VOCAB], int32_t k, int32_t n)
{
    lanes wv[TILE_VOCAB];
    for (int r = 0; r < TILE_VOCAB; r++)
        load_lanes(&wv[r], w[r] + k, n);
    for (int t = 0; t < TILE_ROWS; t++) {
        lanes hv;
        load_lanes(&hv, h[t] + k, n);
        for (int r = 0; r < TILE_VOCAB; r++)
            acc[t * TILE_VOCAB + r] += hv * wv[r];
    }
}

/* out[t·TILE_VOCAB + r] = h[t] · w[r] over d elements. */
KERNEL void dot_tile(const float *const h[TILE_ROWS], const float *const w[TILE_VOCAB], int32_t d,
                     float out[TILE])
{
    lanes acc[TILE];
    for (int i = 0; i < TILE; i++)
        acc[i] = (lanes){0};
    int32_t k = 0;
    for (; k + LANES <= d; k += LANES)
        dot_step(acc, h, w, k, LANES);
    if (k < d) dot_step(acc, h, w, k, d - k);
    for (int i = 0; i < TILE; i += 8)
        fold_8(acc + i, out + i);
}

static inline int32_t min_i32(int32_t a, int32_t b)
{
    return a < b ? a : b;
}

/* logits[i × VOCAB_BLOCK + v] = h[i] · w[v] for n rows of h and nv rows of
 * w, d wide. Tiles past the last row or entry recompute the last one and
 * drop the result. */
LMS_HOT static void block_logits(const float *h, int32_t n, const float *w, int32_t nv, int32_t d,
                                 float *logits)
{
    int32_t slice = W_SLICE_BYTES / (d * (int32_t)sizeof(float)) / TILE_VOCAB * TILE_VOCAB;
    if (slice < TILE_VOCAB) slice = TILE_VOCAB;
    for (int32_t v0 = 0; v0 < nv; v0 += slice)
        for (int32_t i = 0; i < n; i += TILE_ROWS) {
            const float *hr[TILE_ROWS];
            for (int t = 0; t < TILE_ROWS; t++)
                hr[t] = h + (size_t)min_i32(i + t, n - 1) * d;
            for (int32_t v = v0; v < nv && v < v0 + slice; v += TILE_VOCAB) {
                const float *wr[TILE_VOCAB];
                for (int r = 0; r < TILE_VOCAB; r++)
                    wr[r] = w + (size_t)min_i32(v + r, nv - 1) * d;
                float out[TILE];
                dot_tile(hr, wr, d, out);
                for (int t = 0; t < TILE_ROWS && i + t < n; t++)
                    for (int r = 0; r < TILE_VOCAB && v + r < nv; r++)
                        logits[(size_t)(i + t) * VOCAB_BLOCK + v + r] = out[t * TILE_VOCAB + r];
            }
        }
}

/* The chunk's scratch: normalised rows, one logits block per thread, and
 * each row's softmax max and sum per vocabulary block. */
typedef struct {
    float *h;          /* [chunk × d] */
    matmul_scratch *q; /* h quantised, for a Q8 head */
    float *logits;     /* [threads × chunk × VOCAB_BLOCK] */
    float *block_max;  /* [chunk × n_blocks] */
    double *block_sum; /* [chunk × n_blocks] */
} head_scratch;

/* Label log-probs of the n rows in s->h: out[i × n_labels + j]. */
static void score_chunk(const lms_model *m, const lms_weights *head, const matmul_config *mm,
                        head_scratch *s, int32_t n, const int32_t *labels, int32_t n_labels,
                        float *out)
{
    const int32_t d = m->cfg.d_model, vocab = m->cfg.vocab_size;
    const int32_t n_blocks = (vocab + VOCAB_BLOCK - 1) / VOCAB_BLOCK;
    matmul_input in;
    matmul_prepare(mm, head, s->h, n, s->q, &in);
#pragma omp parallel for schedule(static)
    for (int32_t b = 0; b < n_blocks; b++) {
        const int32_t v0 = b * VOCAB_BLOCK, nv = min_i32(VOCAB_BLOCK, vocab - v0);
        float *lg = s->logits + (size_t)omp_get_thread_num() * n * VOCAB_BLOCK;
        if (head->format == LMS_WEIGHTS_F32)
            block_logits(s->h, n, head->f32 + (size_t)v0 * d, nv, d, lg);
        else
            matmul_block(mm, head, &in, 0, n, v0, v0 + nv, lg, VOCAB_BLOCK, KERNEL_STORE);
        for (int32_t i = 0; i < n; i++) {
            float *row = lg + (size_t)i * VOCAB_BLOCK;
            for (int32_t j = 0; j < n_labels; j++)
                if (labels[j] >= v0 && labels[j] < v0 + nv)
                    out[(size_t)i * n_labels + j] = row[labels[j] - v0];
            float mx = vec_max(row, nv);
            s->block_max[(size_t)i * n_blocks + b] = mx;
            s->block_sum[(size_t)i * n_blocks + b] = vec_exp_shifted(row, nv, mx);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        const float *bm = s->block_max + (size_t)i * n_blocks;
        const double *bs = s->block_sum + (size_t)i * n_blocks;
        float mx = vec_max(bm, n_blocks);
        double sum = 0.0;
        for (int32_t b = 0; b < n_blocks; b++)
            sum += bs[b] * exp((double)bm[b] - mx);
        double lse = mx + log(sum);
        for (int32_t j = 0; j < n_labels; j++)
            out[(size_t)i * n_labels + j] = (float)((double)out[(size_t)i * n_labels + j] - lse);
    }
}

lms_status lm_head_label_logprobs(const lms_model *m, const lms_weights *head,
                                  const matmul_config *mm, const float *x, const int32_t *rows,
                                  int32_t n_rows, const int32_t *labels, int32_t n_labels,
                                  float *out, lms_error *err)
{
    const lms_model_config *c = &m->cfg;
    const int32_t d = c->d_model, n_blocks = (c->vocab_size + VOCAB_BLOCK - 1) / VOCAB_BLOCK;
    int32_t chunk = CHUNK_BYTES / (d * (int32_t)sizeof(float));
    chunk = chunk < CHUNK_MIN_ROWS   ? CHUNK_MIN_ROWS
            : chunk > CHUNK_MAX_ROWS ? CHUNK_MAX_ROWS
                                     : chunk;
    const size_t threads = (size_t)omp_get_max_threads();
    head_scratch s = {
        .h = lms_alloc((size_t)chunk * d * sizeof(float)),
        .logits = lms_alloc(threads * chunk * VOCAB_BLOCK * sizeof(float)),
        .block_max = lms_alloc((size_t)chunk * n_blocks * sizeof(float)),
        .block_sum = lms_alloc((size_t)chunk * n_blocks * sizeof(double)),
        .q = matmul_scratch_create(chunk, d),
    };
    lms_status st = LMS_OK;
    if (!s.h || !s.logits || !s.block_max || !s.block_sum || !s.q) {
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for the LM head");
        goto out;
    }
    for (int32_t s0 = 0; s0 < n_rows; s0 += chunk) {
        int32_t n = min_i32(chunk, n_rows - s0);
        for (int32_t i = 0; i < n; i++) {
            int32_t row = rows ? rows[s0 + i] : s0 + i;
            vec_rmsnorm(s.h + (size_t)i * d, x + (size_t)row * d, m->output_norm, d, c->rms_eps);
        }
        score_chunk(m, head, mm, &s, n, labels, n_labels, out + (size_t)s0 * n_labels);
    }
out:
    lms_free(s.h);
    lms_free(s.logits);
    lms_free(s.block_max);
    lms_free(s.block_sum);
    matmul_scratch_free(s.q);
    return st;
}
