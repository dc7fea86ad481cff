/*
 * test_attention.c — attention (attention.c) run over its plans against a
 * double-precision reference of attention.h's visibility rules, in segment
 * and dense mode: a packed request, an extend over cached rows, independent
 * sequences, items shorter and longer than a block, packed tightly and with
 * rows between the segments that belong to none, at two block sizes,
 * on each compute tier (tier_fixture.h) and the generic tier as the
 * reference. Padding rows must come out as exact zeros; the modes and
 * tiers must give the same bits; and a row's output
 * must not depend on how its batch is laid out (packed, one sequence, or an
 * extend over the prefix's cached rows).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "half.h"
#include "kernels.h"
#include "tier_fixture.h"

#define N_HEADS    4
#define N_KV_HEADS 2
#define HEAD_DIM   16
#define Q_DIM      (N_HEADS * HEAD_DIM)
#define KV_DIM     (N_KV_HEADS * HEAD_DIM)
#define MAX_SEGS   16

typedef struct {
    int32_t n_rows, prefix, cached, n_segs;
    int32_t begin[MAX_SEGS], end[MAX_SEGS];
} batch;

/* Segments of the given lengths after `prefix` rows, each starting at a
 * multiple of align: 1 packs them as score.c does, more leaves rows between
 * them that belong to no segment. */
static batch make_batch(int32_t align, int32_t prefix, int32_t cached, const int32_t *lens,
                        int32_t n)
{
    batch b = {.prefix = prefix, .cached = cached, .n_segs = n};
    int32_t row = (prefix + align - 1) / align * align;
    for (int32_t i = 0; i < n; i++) {
        b.begin[i] = row;
        b.end[i] = row + lens[i];
        row = (b.end[i] + align - 1) / align * align;
    }
    b.n_rows = row;
    return b;
}

static void fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        x[i] = (float)((double)(seed >> 40) / (double)(1 << 24)) * 2.0f - 1.0f;
    }
}

/* The segment of row r, or -1 (a prefix or a padding row). */
static int32_t segment_of(const batch *b, int32_t r)
{
    for (int32_t s = 0; s < b->n_segs; s++)
        if (r >= b->begin[s] && r < b->end[s]) return s;
    return -1;
}

/* The keys row r sees, as indices into [cached rows, then batch rows]. */
static int32_t visible_keys(const batch *b, int32_t r, int32_t *keys)
{
    const int32_t seg = segment_of(b, r);
    if (r >= b->prefix && seg < 0) return 0; /* padding */
    int32_t n = 0;
    for (int32_t c = 0; c < b->cached; c++)
        keys[n++] = c;
    const int32_t own0 = seg < 0 ? 0 : b->begin[seg];
    for (int32_t c = 0; c < (seg < 0 ? 0 : b->prefix); c++)
        keys[n++] = b->cached + c;
    for (int32_t c = own0; c <= r; c++)
        keys[n++] = b->cached + c;
    return n;
}

/* out[r] for every row, in double, from the visible keys only. */
static void reference(const batch *b, const float *q, const float *k, const float *v,
                      const float *ck, const float *cv, double *out)
{
    const int32_t total = b->cached + b->n_rows;
    int32_t *keys = malloc((size_t)total * sizeof *keys);
    double *w = malloc((size_t)total * sizeof *w);
    assert_true(keys && w);
    for (int32_t r = 0; r < b->n_rows; r++) {
        const int32_t n = visible_keys(b, r, keys);
        for (int32_t h = 0; h < N_HEADS; h++) {
            const int32_t g = h / (N_HEADS / N_KV_HEADS);
            const float *qr = q + (size_t)r * Q_DIM + h * HEAD_DIM;
            double *o = out + (size_t)r * Q_DIM + h * HEAD_DIM;
            memset(o, 0, HEAD_DIM * sizeof *o);
            double mx = -INFINITY, sum = 0;
            for (int32_t i = 0; i < n; i++) {
                const int32_t j = keys[i];
                const float *kj = (j < b->cached ? ck + (size_t)j * KV_DIM
                                                 : k + (size_t)(j - b->cached) * KV_DIM) +
                                  g * HEAD_DIM;
                double s = 0;
                for (int32_t d = 0; d < HEAD_DIM; d++)
                    s += (double)qr[d] * kj[d];
                w[i] = s / sqrt((double)HEAD_DIM);
                if (w[i] > mx) mx = w[i];
            }
            for (int32_t i = 0; i < n; i++)
                sum += w[i] = exp(w[i] - mx);
            for (int32_t i = 0; i < n; i++) {
                const int32_t j = keys[i];
                const float *vj = (j < b->cached ? cv + (size_t)j * KV_DIM
                                                 : v + (size_t)(j - b->cached) * KV_DIM) +
                                  g * HEAD_DIM;
                for (int32_t d = 0; d < HEAD_DIM; d++)
                    o[d] += w[i] / sum * vj[d];
            }
        }
    }
    free(keys);
    free(w);
}

/* The tiers under test (main), then the generic tier as the reference
 * every tier must equal bit for bit. */
static const compute_tier *tiers[FIXTURE_MAX_TIERS + 1];
static int n_tiers;

/* 16-bit attention (f16 keys and values, attention.h) in this run of the
 * tests (main runs them in f32, then in 16 bits on the tiers that have
 * 16-bit kernels). */
static bool kv16;

/* x rounded to f16 and back: what 16-bit attention multiplies. */
static void round_to_f16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = lms_f16_to_f32(lms_f32_to_f16(x[i]));
}

/* x as f16 bits (a 16-bit KV prefix). */
static uint16_t *as_f16(const float *x, size_t n)
{
    uint16_t *h = malloc((n ? n : 1) * sizeof *h);
    assert_non_null(h);
    for (size_t i = 0; i < n; i++)
        h[i] = lms_f32_to_f16(x[i]);
    return h;
}

/* attn_run over layout l with kernel tier k (false when the run's
 * attention precision is not one the tier has). */
static bool run_layout(const attn_layout *l, int32_t block_rows, const compute_tier *k,
                       int32_t cached, const float *q, const float *kk, const float *v,
                       const float *ck, const float *cv, float *out)
{
    if (kv16 && !k->kernels->w16) return false;
    const attn_geometry geo = {N_HEADS,
                               N_KV_HEADS,
                               HEAD_DIM,
                               block_rows,
                               k->kernels->vec,
                               k->kernels->f32,
                               kv16 ? k->kernels->w16 : NULL};
    attn_plan *plan = NULL;
    lms_error err = {0};
    assert_int_equal(attn_plan_create(l, &geo, cached, &plan, &err), LMS_OK);
    const size_t n = (size_t)cached * KV_DIM;
    uint16_t *ck16 = kv16 ? as_f16(ck, n) : NULL, *cv16 = kv16 ? as_f16(cv, n) : NULL;
    const void *ckv = kv16 ? (const void *)ck16 : ck, *cvv = kv16 ? (const void *)cv16 : cv;
    attn_run(plan, q, kk, v, cached ? ckv : NULL, cached ? cvv : NULL, out);
    attn_plan_free(plan);
    free(ck16);
    free(cv16);
    return true;
}

/* Random inputs for batch b, the reference, and each mode's output on each
 * tier: all within 1e-5 of the reference, all the same bits. */
static void check_batch(const batch *b, int32_t br, uint64_t seed)
{
    const int32_t t = b->n_rows;
    float *q = malloc((size_t)t * Q_DIM * sizeof *q);
    float *k = malloc((size_t)t * KV_DIM * sizeof *k);
    float *v = malloc((size_t)t * KV_DIM * sizeof *v);
    float *ck = malloc((size_t)(b->cached + 1) * KV_DIM * sizeof *ck);
    float *cv = malloc((size_t)(b->cached + 1) * KV_DIM * sizeof *cv);
    float *out = malloc((size_t)t * Q_DIM * sizeof *out);
    float *first = malloc((size_t)t * Q_DIM * sizeof *first);
    double *ref = malloc((size_t)t * Q_DIM * sizeof *ref);
    assert_true(q && k && v && ck && cv && out && first && ref);
    fill(q, (size_t)t * Q_DIM, seed);
    fill(k, (size_t)t * KV_DIM, seed + 1);
    fill(v, (size_t)t * KV_DIM, seed + 2);
    fill(ck, (size_t)b->cached * KV_DIM, seed + 3);
    fill(cv, (size_t)b->cached * KV_DIM, seed + 4);
    if (kv16) { /* the reference on the values 16-bit attention multiplies */
        float *rk = malloc((size_t)t * KV_DIM * sizeof *rk), *rv = malloc((size_t)t * KV_DIM * 4);
        float *rck = malloc((size_t)(b->cached + 1) * KV_DIM * 4);
        float *rcv = malloc((size_t)(b->cached + 1) * KV_DIM * 4);
        assert_true(rk && rv && rck && rcv);
        memcpy(rk, k, (size_t)t * KV_DIM * 4);
        memcpy(rv, v, (size_t)t * KV_DIM * 4);
        memcpy(rck, ck, (size_t)b->cached * KV_DIM * 4);
        memcpy(rcv, cv, (size_t)b->cached * KV_DIM * 4);
        round_to_f16(rk, (size_t)t * KV_DIM);
        round_to_f16(rv, (size_t)t * KV_DIM);
        round_to_f16(rck, (size_t)b->cached * KV_DIM);
        round_to_f16(rcv, (size_t)b->cached * KV_DIM);
        reference(b, q, rk, rv, rck, rcv, ref);
        free(rk);
        free(rv);
        free(rck);
        free(rcv);
    } else {
        reference(b, q, k, v, ck, cv, ref);
    }

    int ran = 0;
    for (int run = 0; run < 2 * n_tiers; run++) {
        const int dense = run % 2;
        const compute_tier *tr = tiers[run / 2];
        const attn_layout l = {.n_rows = t,
                               .prefix_rows = b->prefix,
                               .n_segments = b->n_segs,
                               .seg_begin = b->begin,
                               .seg_end = b->end,
                               .dense_mask = dense};
        fill(out, (size_t)t * Q_DIM, seed + 5); /* every row must be written */
        if (!run_layout(&l, br, tr, b->cached, q, k, v, ck, cv, out)) continue;
        if (ran++ == 0) memcpy(first, out, (size_t)t * Q_DIM * sizeof *out);
        if (memcmp(first, out, (size_t)t * Q_DIM * sizeof *out))
            fail_msg("%s mode on the %s kernels differs from the first run (%s)",
                     dense ? "dense" : "segment", tr->name, kv16 ? "16-bit" : "f32");
        for (int32_t r = 0; r < t; r++) {
            const bool padding = r >= b->prefix && segment_of(b, r) < 0;
            for (int32_t i = 0; i < Q_DIM; i++) {
                const float got = out[(size_t)r * Q_DIM + i];
                const double want = ref[(size_t)r * Q_DIM + i];
                if (padding ? got != 0.0f : !(fabs(got - want) <= 1e-5))
                    fail_msg("%s, %s, blocks of %d: row %d [%d] = %.9g, reference %.9g",
                             kv16 ? "16-bit" : "f32", dense ? "dense" : "segment", br, r, i, got,
                             want);
            }
        }
    }
    free(q);
    free(k);
    free(v);
    free(ck);
    free(cv);
    free(out);
    free(first);
    free(ref);
}

/* Packed tightly in the engine's blocks, and with rows between segments
 * in blocks of another size. */
static void check_all(int32_t prefix, int32_t cached, const int32_t *lens, int32_t n)
{
    const struct {
        int32_t align, block_rows;
    } runs[] = {{1, ATTN_BLOCK_ROWS}, {48, 144}};
    for (size_t i = 0; i < sizeof runs / sizeof *runs; i++) {
        const batch b = make_batch(runs[i].align, prefix, cached, lens, n);
        check_batch(&b, runs[i].block_rows, 7 + i);
    }
}

/* A query of more than a block, then short items (grouped) and long ones
 * (cut into pieces). */
static void test_packed_request(void **state)
{
    (void)state;
    const int32_t lens[] = {5, 1, 40, 400, 17, 3, 500, 2};
    check_all(400, 0, lens, 8);
}

/* Items over a cached prefix, from row 0. */
static void test_extend_over_cached_rows(void **state)
{
    (void)state;
    const int32_t lens[] = {30, 1, 500, 9, 60};
    check_all(0, 123, lens, 5);
}

/* Whole sequences side by side: causal within each, nothing across. */
static void test_independent_sequences(void **state)
{
    (void)state;
    const int32_t lens[] = {3, 390, 1, 77, 384};
    check_all(0, 0, lens, 5);
}

/* Copies rows [from, from + n) of every one of q, k, v (row-major, their
 * widths) to row `to` of the destination buffers. */
static void copy_rows(float *const dst[3], const float *const src[3], int32_t to, int32_t from,
                      int32_t n)
{
    const size_t width[3] = {Q_DIM, KV_DIM, KV_DIM};
    for (int i = 0; i < 3; i++)
        memcpy(dst[i] + (size_t)to * width[i], src[i] + (size_t)from * width[i],
               (size_t)n * width[i] * sizeof(float));
}

/* A prefix of 450 rows (more than a block) and two items: item B's rows
 * give the same bits packed after the prefix and item A, as one sequence
 * with the prefix, and as an extend over the prefix's cached K/V. */
static void test_layout_does_not_change_a_row(void **state)
{
    (void)state;
    enum { P = 450, A = 29, B = 37, T = P + A + B };
    float *in[3], *seq[3], *out = malloc((size_t)T * Q_DIM * sizeof *out);
    float *packed = malloc((size_t)T * Q_DIM * sizeof *packed);
    const size_t width[3] = {Q_DIM, KV_DIM, KV_DIM};
    for (int i = 0; i < 3; i++) {
        in[i] = malloc((size_t)T * width[i] * sizeof(float));
        seq[i] = malloc((size_t)T * width[i] * sizeof(float));
        fill(in[i], (size_t)T * width[i], 11 + (uint64_t)i);
    }
    for (int ti = 0; ti < n_tiers; ti++) {
        const compute_tier *tr = tiers[ti];
        const int32_t begin[2] = {P, P + A}, end[2] = {P + A, T};
        const attn_layout pack = {T, P, 2, begin, end, false};
        if (!run_layout(&pack, 384, tr, 0, in[0], in[1], in[2], NULL, NULL, packed)) continue;

        /* prefix ++ B as one causal sequence */
        copy_rows(seq, (const float *const *)in, 0, 0, P);
        copy_rows(seq, (const float *const *)in, P, P + A, B);
        const int32_t s_begin = 0, s_end = P + B;
        const attn_layout one = {P + B, 0, 1, &s_begin, &s_end, false};
        run_layout(&one, 384, tr, 0, seq[0], seq[1], seq[2], NULL, NULL, out);
        if (memcmp(out, packed, (size_t)P * Q_DIM * sizeof *out) ||
            memcmp(out + (size_t)P * Q_DIM, packed + (size_t)(P + A) * Q_DIM,
                   (size_t)B * Q_DIM * sizeof *out))
            fail_msg("%s: one sequence differs from the pack", tr->name);

        /* B as an extend over the prefix's cached K/V */
        const int32_t e_begin = 0, e_end = B;
        const attn_layout extend = {B, 0, 1, &e_begin, &e_end, false};
        run_layout(&extend, 384, tr, P, in[0] + (size_t)(P + A) * Q_DIM,
                   in[1] + (size_t)(P + A) * KV_DIM, in[2] + (size_t)(P + A) * KV_DIM, in[1], in[2],
                   out);
        if (memcmp(out, packed + (size_t)(P + A) * Q_DIM, (size_t)B * Q_DIM * sizeof *out))
            fail_msg("%s: the extend differs from the pack", tr->name);
    }
    for (int i = 0; i < 3; i++) {
        free(in[i]);
        free(seq[i]);
    }
    free(out);
    free(packed);
}

int main(void)
{
    n_tiers = fixture_tiers(tiers);
    bool generic = false;
    for (int i = 0; i < n_tiers; i++)
        generic |= !strcmp(tiers[i]->name, "generic");
    for (const compute_tier *const *t = compute_tiers; *t && !generic; t++)
        if (!strcmp((*t)->name, "generic")) tiers[n_tiers++] = *t;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packed_request),
        cmocka_unit_test(test_extend_over_cached_rows),
        cmocka_unit_test(test_independent_sequences),
        cmocka_unit_test(test_layout_does_not_change_a_row),
    };
    int failed = 0;
    for (int half = 0; half < 2; half++) {
        kv16 = half;
        print_message("%s attention\n", kv16 ? "16-bit" : "f32");
        failed += cmocka_run_group_tests(tests, NULL, NULL);
    }
    return failed;
}
