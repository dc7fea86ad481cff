/*
 * lm_head.c — the end of a forward pass for the rows that are scored: final
 * RMSNorm, the LM head (a logit for every vocabulary entry) and the
 * log-softmax, of which only the label columns are kept.
 *
 * A scoring pass has few score rows (one per item) against a vocabulary of
 * 32k-152k entries, so the head is bound by reading the output matrix W
 * (151,936 × 1,024 values for Qwen3-0.6B). Each chunk of score rows reads
 * W once, in vocabulary blocks spread over the threads, through the tier's
 * kernels (matmul_block); a block's logits stay in the thread's cache,
 * where the softmax's max and exponential sum are taken at once. The
 * per-block sums are combined in block order, so a row's result depends
 * neither on the thread count nor on the other rows.
 */
#include "lm_head.h"

#include <math.h>
#include <omp.h>
#include <string.h>

#include "alloc.h"
#include "vec.h"

/* Vocabulary entries per block: one block's logits for a chunk of rows
 * (chunk × VOCAB_BLOCK floats) stay in L2 while its softmax terms are taken.
 * Results depend on this constant (the softmax sum is folded per block). */
#define VOCAB_BLOCK 1024

/* Score rows per pass over W: as many as fit in about this many bytes (the
 * kernels come back to them for every panel of W, from L2), within
 * [CHUNK_MIN_ROWS, CHUNK_MAX_ROWS]. */
#define CHUNK_BYTES    (256 * 1024)
#define CHUNK_MIN_ROWS 16
#define CHUNK_MAX_ROWS 64

static inline int32_t min_i32(int32_t a, int32_t b)
{
    return a < b ? a : b;
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
    const int32_t vocab = m->cfg.vocab_size, n_blocks = (vocab + VOCAB_BLOCK - 1) / VOCAB_BLOCK;
    matmul_input in;
    matmul_prepare(mm, head, s->h, n, s->q, &in);
#pragma omp parallel for schedule(static)
    for (int32_t b = 0; b < n_blocks; b++) {
        const int32_t v0 = b * VOCAB_BLOCK, nv = min_i32(VOCAB_BLOCK, vocab - v0);
        float *lg = s->logits + (size_t)omp_get_thread_num() * n * VOCAB_BLOCK;
        matmul_block(mm, head, &in, 0, n, v0, v0 + nv, lg, VOCAB_BLOCK, KERNEL_STORE);
        for (int32_t i = 0; i < n; i++) {
            float *row = lg + (size_t)i * VOCAB_BLOCK;
            for (int32_t j = 0; j < n_labels; j++)
                if (labels[j] >= v0 && labels[j] < v0 + nv)
                    out[(size_t)i * n_labels + j] = row[labels[j] - v0];
            float mx = mm->tier->kernels->vec->max(row, nv);
            s->block_max[(size_t)i * n_blocks + b] = mx;
            s->block_sum[(size_t)i * n_blocks + b] =
                mm->tier->kernels->vec->exp_shifted(row, nv, mx);
        }
    }
    for (int32_t i = 0; i < n; i++) {
        const float *bm = s->block_max + (size_t)i * n_blocks;
        const double *bs = s->block_sum + (size_t)i * n_blocks;
        float mx = mm->tier->kernels->vec->max(bm, n_blocks);
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
            mm->tier->kernels->vec->rmsnorm(s.h + (size_t)i * d, x + (size_t)row * d,
                                            m->output_norm, d, c->rms_eps);
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
