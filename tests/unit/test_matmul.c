/*
 * test_matmul.c — the projections (compute/matmul.c) and the kernels under
 * them (kernels_*.c), on each compute tier (tier_fixture.h): every tier's
 * product is, bit for bit, the sequence of operations kernels.h documents
 * (f32 activations, or bf16 on the tiers that round them), computed here
 * in plain C; rows do not depend on the batch around them;
 * the activation quantiser matches its definition. Shapes are odd on
 * purpose: columns not a multiple of the panel, k not a multiple of the
 * block.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <omp.h>

#include "alloc.h"
#include "half.h"
#include "matmul.h"
#include "tier_fixture.h"
#include "weights_fixture.h"

/* The kernels' arithmetic, per kernels.h, in plain C from the packed
 * values (16-bit) or codes (Q8, with x quantised by the tier's quantiser). */
static float reference_element(const lms_weights *w, const matmul_input *in, int32_t r, int32_t c,
                               const float *wrow)
{
    float acc = 0.0f;
    if (w->format != LMS_WEIGHTS_Q8) {
        for (int32_t kk = 0; kk < w->k; kk++)
            acc = fmaf(in->x[(size_t)r * w->k + kk], wrow[kk], acc);
        return acc;
    }
    const int32_t blocks = lms_weights_blocks(w), groups = lms_weights_groups(w);
    const size_t p = (size_t)c / LMS_PANEL, j = (size_t)c % LMS_PANEL;
    const int32_t halves = w->layout.halves == 2 ? 2 : 1, per_half = LMS_Q8_BLOCK / halves;
    for (int32_t b = 0; b < blocks; b++) {
        const size_t pb = p * blocks + b, pg = p * groups + b / w->layout.group_blocks;
        const int8_t *xc = in->codes + (size_t)r * blocks * 2 * LMS_Q8_BLOCK +
                           (size_t)b * w->x_codes * LMS_Q8_BLOCK;
        const float sx = in->scales[(size_t)r * blocks + b];
        const float d = lms_f16_to_f32(w->scale16[pg * LMS_PANEL + j]);
        int32_t sum_x = 0;
        for (int32_t h = 0; h < halves; h++) {
            int32_t sum = 0;
            for (int i = h * per_half; i < (h + 1) * per_half; i++) {
                const int32_t code = lms_weights_q8_code(w, pb, i, j);
                const int32_t code_x = w->x_codes == 2 ? 128 * xc[i] + xc[LMS_Q8_BLOCK + i] : xc[i];
                sum += code * code_x;
                sum_x += code_x;
            }
            const float s =
                w->sub_scale ? d * (float)w->sub_scale[(pb * w->layout.halves + h) * LMS_PANEL + j]
                             : d;
            acc = fmaf((float)sum, s * sx, acc);
        }
        if (!w->offset16) continue;
        const float m = lms_f16_to_f32(w->offset16[pg * LMS_PANEL + j]);
        const float o = w->sub_offset ? m * (float)w->sub_offset[pb * LMS_PANEL + j] : m;
        acc = fmaf(o, sx * (float)sum_x, acc);
    }
    return acc;
}

/* DAZ on an input, FTZ on a result (tdpbf16ps). */
static float flush(float v)
{
    return fpclassify(v) == FP_SUBNORMAL ? copysignf(0.0f, v) : v;
}

/* One tdpbf16ps step of an element: chains of the even and the odd k
 * values of a chunk of 32 (zeros past k) from 0, their sum added to acc. */
static float chunk_step(float acc, const float *a, const float *wrow, int32_t c, int32_t k)
{
    float chain[2] = {0.0f, 0.0f};
    for (int32_t i = 0; i < 32; i++) {
        const bool in = c + i < k;
        chain[i % 2] =
            flush(fmaf(in ? flush(a[i]) : 0.0f, in ? flush(wrow[c + i]) : 0.0f, chain[i % 2]));
    }
    return flush(acc + flush(chain[0] + chain[1]));
}

/* kernels.h's bf16 sequence, per the SDM's tdpbf16ps, from x and the
 * matrix's values: x as hi = bf16(x) and, with two values, lo = bf16(x -
 * hi); per chunk of 32 k values, the hi step, then the lo step. */
static float reference_bf16_element(const float *x, const float *wrow, int32_t k, int32_t values)
{
    float acc = 0.0f;
    for (int32_t c = 0; c < k; c += 32) {
        float hi[32] = {0}, lo[32] = {0};
        for (int32_t i = 0; i < 32 && c + i < k; i++) {
            hi[i] = lms_bf16_to_f32(lms_f32_to_bf16(x[c + i]));
            lo[i] = lms_bf16_to_f32(lms_f32_to_bf16(x[c + i] - hi[i]));
        }
        acc = chunk_step(acc, hi, wrow, c, k);
        if (values == 2) acc = chunk_step(acc, lo, wrow, c, k);
    }
    return acc;
}

/* kernels.h's avx512-bf16 sequence, per the SDM's vdpbf16ps, from x and
 * the matrix's values: x as hi (and lo) as above; per pair of k values
 * (zeros past k), the hi step, then the lo step, each the odd product then
 * the even one, fused multiply-adds into acc with DAZ and FTZ. */
static float reference_vdpbf16_element(const float *x, const float *wrow, int32_t k, int32_t values)
{
    float acc = 0.0f;
    for (int32_t kk = 0; kk < k; kk += 2) {
        float hi[2] = {0}, lo[2] = {0}, w[2] = {0};
        for (int32_t e = 0; e < 2 && kk + e < k; e++) {
            hi[e] = lms_bf16_to_f32(lms_f32_to_bf16(x[kk + e]));
            lo[e] = lms_bf16_to_f32(lms_f32_to_bf16(x[kk + e] - hi[e]));
            w[e] = wrow[kk + e];
        }
        for (int part = 0; part < values; part++)
            for (int e = 1; e >= 0; e--)
                acc = flush(fmaf(flush(part ? lo[e] : hi[e]), flush(w[e]), flush(acc)));
    }
    return acc;
}

/* pack() in the layout the tier keeps (tier.h compute_tier_own_layout). */
static lms_weights pack_for(const compute_tier *tier, lms_dtype type, const unsigned char *src,
                            lms_weights_format format, int32_t n, int32_t k, void **buffer)
{
    lms_weights w;
    lms_error err = {0};
    assert_int_equal(lms_weights_alloc(&w, type, format, n, k, buffer, &err), LMS_OK);
    compute_tier_own_layout(tier, &w);
    const lms_pack_job job = {type, src, &w, false};
    assert_int_equal(lms_pack_run(&job, 1, NULL, &err), LMS_OK);
    return w;
}

/* The tiers under test (main), as projection set-ups with 8-row tiles. */
static matmul_config tiers[FIXTURE_MAX_TIERS];
static int n_tiers;

/* Store and accumulate, 1..40 rows, on every tier: the exact reference;
 * and each row alone equals the row inside the batch. The matrices: each
 * 16-bit format and Q8 from floats (k = 70), and Q8 from every ggml block
 * type (k = 512: whole super-blocks): every Q8 layout, each bias (on the
 * amx tiers tdpbssd for the full-range codes, tdpbsud for the others);
 * an odd k for bf16 (the amx tiers' unpaired last k value). */
static void test_kernels_are_the_reference(void **state)
{
    (void)state;
    const struct {
        lms_dtype type;
        lms_weights_format format;
        int32_t k;
    } cases[] = {
        {LMS_DTYPE_F32, LMS_WEIGHTS_F32, 70},   {LMS_DTYPE_Q4_K, LMS_WEIGHTS_F32, 512},
        {LMS_DTYPE_F16, LMS_WEIGHTS_F16, 70},   {LMS_DTYPE_F32, LMS_WEIGHTS_BF16, 70},
        {LMS_DTYPE_BF16, LMS_WEIGHTS_BF16, 33}, {LMS_DTYPE_F32, LMS_WEIGHTS_Q8, 70},
        {LMS_DTYPE_Q4_0, LMS_WEIGHTS_Q8, 512},  {LMS_DTYPE_Q4_1, LMS_WEIGHTS_Q8, 512},
        {LMS_DTYPE_Q5_0, LMS_WEIGHTS_Q8, 512},  {LMS_DTYPE_Q5_1, LMS_WEIGHTS_Q8, 512},
        {LMS_DTYPE_Q4_K, LMS_WEIGHTS_Q8, 512},  {LMS_DTYPE_Q5_K, LMS_WEIGHTS_Q8, 512},
        {LMS_DTYPE_Q6_K, LMS_WEIGHTS_Q8, 512},  {LMS_DTYPE_Q8_0, LMS_WEIGHTS_Q8, 512},
    };
    const int32_t n = 77, max_k = 512, max_rows = 40;
    uint64_t seed = 11;
    float *v = malloc((size_t)n * max_k * sizeof *v),
          *x = malloc((size_t)max_rows * max_k * sizeof *x);
    float *y = malloc((size_t)max_rows * n * sizeof *y), *alone = malloc((size_t)n * sizeof *alone);
    float *wrows = malloc((size_t)n * max_k * sizeof *wrows);
    for (size_t i = 0; i < (size_t)n * max_k; i++)
        v[i] = uniform(&seed);
    for (size_t i = 0; i < (size_t)max_rows * max_k; i++)
        x[i] = uniform(&seed) * (i % 11 == 0 ? 8.0f : 1.0f);
    matmul_scratch *s = matmul_scratch_create(max_rows, max_k),
                   *s1 = matmul_scratch_create(1, max_k);
    assert_true(s && s1);
    for (size_t cs = 0; cs < sizeof cases / sizeof *cases; cs++) {
        const lms_dtype type = cases[cs].type;
        const int32_t k = cases[cs].k;
        unsigned char *src = lms_dtype_block_elements(type) > 1
                                 ? random_blocks(type, n, k, 13 + cs, false)
                                 : store(type, v, n, k);
        void *buffer;
        lms_weights w = pack(type, src, cases[cs].format, n, k, &buffer);
        const char *name = lms_dtype_name(type), *format = lms_weights_format_name(w.format);
        for (int32_t r = 0; r < n; r++)
            lms_weights_row(&w, r, wrows + (size_t)r * k);
        /* Q8 and BF16 with one code (value) per activation value, then with
         * two */
        const bool two = w.format == LMS_WEIGHTS_Q8 || w.format == LMS_WEIGHTS_BF16;
        for (int run = 0; run < n_tiers * (two ? 2 : 1); run++) {
            const int ti = run % n_tiers;
            const matmul_config cfg = tiers[ti];
            w.x_codes = 1 + run / n_tiers;
            if (!compute_tier_multiplies(cfg.tier, w.format)) continue;
            const kernel_bf16_sequence bf16_x =
                w.format == LMS_WEIGHTS_BF16 ? cfg.tier->bf16_activations : KERNEL_BF16_F32;
            lms_free(buffer);
            w = pack_for(cfg.tier, type, src, cases[cs].format, n, k, &buffer);
            w.x_codes = 1 + run / n_tiers;
            for (int32_t rows = 1; rows <= max_rows; rows += 13) {
                for (int mode = 0; mode < 2; mode++) {
                    for (size_t i = 0; i < (size_t)rows * n; i++)
                        y[i] = (float)i * 0.25f;
                    matmul(&cfg, &w, x, rows, mode ? KERNEL_ACCUMULATE : KERNEL_STORE, y, s);
                    matmul_input in;
                    matmul_prepare(&cfg, &w, x, rows, s, &in);
                    for (int32_t r = 0; r < rows; r++)
                        for (int32_t c = 0; c < n; c++) {
                            const float *xr = x + (size_t)r * k, *wr = wrows + (size_t)c * k;
                            float want = bf16_x == KERNEL_BF16_TDPBF16PS
                                             ? reference_bf16_element(xr, wr, k, w.x_codes)
                                         : bf16_x == KERNEL_BF16_VDPBF16PS
                                             ? reference_vdpbf16_element(xr, wr, k, w.x_codes)
                                             : reference_element(&w, &in, r, c, wr);
                            if (mode) want = (float)((size_t)r * n + c) * 0.25f + want;
                            const float got = y[(size_t)r * n + c];
                            if (memcmp(&got, &want, sizeof got))
                                fail_msg("%s as %s (x in %d codes) on %s, %d rows, %s: [%d][%d] = "
                                         "%.9g, want %.9g",
                                         name, format, w.x_codes, tiers[ti].tier->name, rows,
                                         mode ? "accumulate" : "store", r, c, got, want);
                        }
                    if (mode) continue;
                    for (int32_t r = 0; r < rows; r++) {
                        matmul(&cfg, &w, x + (size_t)r * k, 1, KERNEL_STORE, alone, s1);
                        if (memcmp(alone, y + (size_t)r * n, (size_t)n * sizeof *alone))
                            fail_msg("%s as %s on %s: row %d alone differs from row %d of %d", name,
                                     format, tiers[ti].tier->name, r, r, rows);
                    }
                }
            }
        }
        lms_free(buffer);
        free(src);
    }
    matmul_scratch_free(s);
    matmul_scratch_free(s1);
    free(v);
    free(x);
    free(y);
    free(alone);
    free(wrows);
}

/* matmul_many over BF16 products with one and two bf16 values per
 * activation value (bf16's and bf16x2's, or the LM head's): each gets the
 * bits of its own call, in either order, on every tier. */
static void test_bf16_products_of_one_and_two_values(void **state)
{
    (void)state;
    enum { K = 96, N = 40, ROWS = 19 };
    uint64_t seed = 23;
    float v[N * K], x[ROWS * K], many[2][ROWS * N], one[ROWS * N];
    for (size_t i = 0; i < (size_t)N * K; i++)
        v[i] = uniform(&seed);
    for (size_t i = 0; i < (size_t)ROWS * K; i++)
        x[i] = uniform(&seed) * (i % 5 == 0 ? 9.0f : 1.0f);
    unsigned char *src = store(LMS_DTYPE_F32, v, N, K);
    matmul_scratch *s = matmul_scratch_create(ROWS, K);
    assert_true(src && s);
    for (int ti = 0; ti < n_tiers; ti++) {
        if (!compute_tier_multiplies(tiers[ti].tier, LMS_WEIGHTS_BF16)) continue;
        void *buffers[2];
        lms_weights w[2];
        for (int first = 1; first <= 2; first++) {
            for (int p = 0; p < 2; p++) {
                w[p] = pack_for(tiers[ti].tier, LMS_DTYPE_F32, src, LMS_WEIGHTS_BF16, N, K,
                                &buffers[p]);
                w[p].x_codes = p == 0 ? first : 3 - first;
            }
            const matmul_product products[2] = {{&w[0], many[0], KERNEL_STORE},
                                                {&w[1], many[1], KERNEL_STORE}};
            matmul_many(&tiers[ti], products, 2, x, ROWS, s);
            for (int p = 0; p < 2; p++) {
                matmul(&tiers[ti], &w[p], x, ROWS, KERNEL_STORE, one, s);
                if (memcmp(one, many[p], sizeof one))
                    fail_msg("bf16 in %d values beside %d on %s: differs from its own call",
                             (int)w[p].x_codes, (int)w[1 - p].x_codes, tiers[ti].tier->name);
            }
            lms_free(buffers[0]);
            lms_free(buffers[1]);
        }
    }
    matmul_scratch_free(s);
    free(src);
}

/* matmul_many: products of one x in several formats (Q8 with offsets, Q8
 * with half-block scales, F16, F32), stored and accumulated, give each
 * element the bits its own matmul call gives, on every tier, with rows over
 * several row tiles (the first product needs no quantised x, the last
 * one the blocks' sums). */
static void test_many_products_equal_single_calls(void **state)
{
    (void)state;
    const struct {
        lms_dtype type;
        lms_weights_format format;
        int32_t n;
    } cases[] = {{LMS_DTYPE_F16, LMS_WEIGHTS_F16, 33},
                 {LMS_DTYPE_Q6_K, LMS_WEIGHTS_Q8, 40},
                 {LMS_DTYPE_Q4_1, LMS_WEIGHTS_Q8, 77}};
    enum { N = 3, K = 256, MAX_ROWS = 30, MAX_N = 77 };
    uint64_t seed = 17;
    float v[MAX_N * K], x[MAX_ROWS * K];
    float *many[N], *one = malloc((size_t)MAX_ROWS * MAX_N * sizeof *one);
    void *buffers[N];
    lms_weights w[N];
    unsigned char *src[N];
    for (size_t i = 0; i < (size_t)MAX_ROWS * K; i++)
        x[i] = uniform(&seed) * (i % 7 == 0 ? 5.0f : 1.0f);
    for (int p = 0; p < N; p++) {
        for (size_t i = 0; i < (size_t)cases[p].n * K; i++)
            v[i] = uniform(&seed);
        src[p] = lms_dtype_block_elements(cases[p].type) > 1
                     ? random_blocks(cases[p].type, cases[p].n, K, 31 + p, false)
                     : store(cases[p].type, v, cases[p].n, K);
        w[p] = pack(cases[p].type, src[p], cases[p].format, cases[p].n, K, &buffers[p]);
        many[p] = malloc((size_t)MAX_ROWS * MAX_N * sizeof *many[p]);
        assert_non_null(many[p]);
    }
    matmul_scratch *s = matmul_scratch_create(MAX_ROWS, K);
    assert_true(s && one);
    for (int ti = 0; ti < n_tiers; ti++) {
        if (!compute_tier_multiplies(tiers[ti].tier, LMS_WEIGHTS_Q8)) continue;
        for (int32_t rows = 1; rows <= MAX_ROWS; rows += 29) {
            matmul_product products[N];
            for (int p = 0; p < N; p++) {
                products[p] =
                    (matmul_product){&w[p], many[p], p == 1 ? KERNEL_ACCUMULATE : KERNEL_STORE};
                for (size_t i = 0; i < (size_t)rows * w[p].n; i++)
                    many[p][i] = (float)i * 0.5f;
            }
            matmul_many(&tiers[ti], products, N, x, rows, s);
            for (int p = 0; p < N; p++) {
                for (size_t i = 0; i < (size_t)rows * w[p].n; i++)
                    one[i] = (float)i * 0.5f;
                matmul(&tiers[ti], &w[p], x, rows, products[p].mode, one, s);
                if (memcmp(one, many[p], (size_t)rows * w[p].n * sizeof *one))
                    fail_msg("product %d (%s) on %s, %d rows: differs from its own call", p,
                             lms_dtype_name(cases[p].type), tiers[ti].tier->name, rows);
            }
        }
    }
    matmul_scratch_free(s);
    for (int p = 0; p < N; p++) {
        lms_free(buffers[p]);
        free(src[p]);
        free(many[p]);
    }
    free(one);
}

/* The tile grid follows the thread count (matmul.c); a row's result does
 * not: q, k and v of a 600-row batch, and a down projection accumulated,
 * at 1, 2, 3 and 16 threads, give the same bits in every format the tier
 * multiplies, and for Q8 from floats and from block types with a sub-scale
 * per half (Q6_K) and with offsets (Q4_1). */
static void test_grid_does_not_change_a_row(void **state)
{
    (void)state;
    enum { ROWS = 600, K = 256, N = 160 };
    const struct {
        lms_dtype type;
        lms_weights_format format;
    } cases[] = {
        {LMS_DTYPE_F32, LMS_WEIGHTS_F32}, {LMS_DTYPE_F32, LMS_WEIGHTS_BF16},
        {LMS_DTYPE_F32, LMS_WEIGHTS_Q8},  {LMS_DTYPE_Q6_K, LMS_WEIGHTS_Q8},
        {LMS_DTYPE_Q4_1, LMS_WEIGHTS_Q8},
    };
    const int threads[] = {1, 2, 3, 16};
    uint64_t seed = 23;
    float *v = malloc((size_t)N * K * sizeof *v), *x = malloc((size_t)ROWS * K * sizeof *x);
    float *first = malloc((size_t)ROWS * N * sizeof *first),
          *y = malloc((size_t)ROWS * N * sizeof *y);
    matmul_scratch *s = matmul_scratch_create(ROWS, K);
    assert_true(v && x && first && y && s);
    for (size_t i = 0; i < (size_t)N * K; i++)
        v[i] = uniform(&seed);
    for (size_t i = 0; i < (size_t)ROWS * K; i++)
        x[i] = uniform(&seed);
    const int saved = omp_get_max_threads();
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        const lms_dtype type = cases[c].type;
        unsigned char *src = lms_dtype_block_elements(type) > 1
                                 ? random_blocks(type, N, K, 41 + c, false)
                                 : store(type, v, N, K);
        for (int ti = 0; ti < n_tiers; ti++) {
            if (!compute_tier_multiplies(tiers[ti].tier, cases[c].format)) continue;
            void *buffer;
            const lms_weights w =
                pack_for(tiers[ti].tier, type, src, cases[c].format, N, K, &buffer);
            for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
                omp_set_num_threads(threads[t]);
                float *out = t ? y : first;
                for (size_t i = 0; i < (size_t)ROWS * N; i++)
                    out[i] = (float)(i % 7);
                const matmul_product p[] = {{&w, out, KERNEL_ACCUMULATE}};
                matmul_many(&tiers[ti], p, 1, x, ROWS, s);
                if (t && memcmp(first, y, (size_t)ROWS * N * sizeof *y))
                    fail_msg("%s as %s on %s: %d threads differ from one", lms_dtype_name(type),
                             lms_weights_format_name(cases[c].format), tiers[ti].tier->name,
                             threads[t]);
            }
            lms_free(buffer);
        }
        free(src);
    }
    omp_set_num_threads(saved);
    matmul_scratch_free(s);
    free(v);
    free(x);
    free(first);
    free(y);
}

/* The activation quantisers (one and two codes) on every tier against
 * their definition (kernels.h), with zeros, NaN, huge values, a short
 * last block, and more blocks than a kernel's group of 16 (the avx512
 * one's), each of another magnitude. */
static void test_quantiser(void **state)
{
    (void)state;
    enum { K = 589, BLOCKS = 19 };
    float x[BLOCKS * 32] = {0};
    uint64_t seed = 5;
    for (int32_t i = 0; i < K; i++)
        x[i] = uniform(&seed) * 3.0f * (float)(1 + i / 32);
    for (int32_t i = 32; i < 64; i++)
        x[i] = 0.0f; /* an all-zero block: scale 0, codes 0 */
    x[70] = NAN;
    x[71] = -1e30f;
    for (int run = 0; run < 2 * n_tiers; run++) {
        const int two = run / n_tiers, n_codes = 1 + two;
        const compute_tier *tier = tiers[run % n_tiers].tier;
        const q8_kernels *q8 = two ? tier->kernels->q8x2 : tier->kernels->q8;
        if (!q8) continue;
        int8_t codes[BLOCKS * 64];
        float scales[BLOCKS];
        int32_t comp[BLOCKS * 2];
        memset(codes, 0x55, sizeof codes);
        q8->quantize(x, K, BLOCKS, codes, scales, comp);
        for (int32_t b = 0; b < BLOCKS; b++) {
            float amax = 0.0f;
            for (int32_t i = 32 * b; i < 32 * b + 32; i++)
                amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
            const float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
            const float scale = two ? d * 0x1p-7f : d;
            assert_true(memcmp(&scales[b], &scale, sizeof scale) == 0);
            int32_t sum[2] = {0, 0};
            for (int32_t i = 32 * b; i < 32 * b + 32; i++) {
                const float h = x[i] * id;
                const float hc = h > -127.0f ? (h < 127.0f ? h : 127.0f) : -127.0f;
                const float hi = nearbyintf(hc);
                const float r = x[i] - hi * d;
                const float l = r * (id * 128.0f);
                const float lc = l > -127.0f ? (l < 127.0f ? l : 127.0f) : -127.0f;
                const int32_t want_hi = (int32_t)hi, want_lo = (int32_t)nearbyintf(lc);
                const int8_t *got = codes + b * 32 * n_codes + i % 32;
                if (got[0] != want_hi || (two && got[32] != want_lo))
                    fail_msg("%s, %d codes: value %d codes (%d, %d), want (%d, %d)", tier->name,
                             n_codes, i, got[0], two ? got[32] : 0, want_hi, two ? want_lo : 0);
                sum[i % 32 / 16] += two ? 128 * want_hi + want_lo : want_hi;
            }
            assert_int_equal(comp[2 * b], sum[0]);
            assert_int_equal(comp[2 * b + 1], sum[1]);
        }
        assert_int_equal(codes[2 * 32 * n_codes + 70 % 32], -127); /* NaN */
    }
}

/* One code per value is within half a step of x (the block's largest
 * magnitude over 127); two carry 15 bits, within half of a 128th of that:
 * |x - code · scale| ≤ scale/2, plus the f32 rounding of the residual (an
 * ulp of x). */
static void test_quantiser_precision(void **state)
{
    (void)state;
    float x[32];
    uint64_t seed = 9;
    for (int rep = 0; rep < 2000 * n_tiers; rep++) {
        const compute_tier *tier = tiers[rep % n_tiers].tier;
        const bool two = rep % 2;
        const q8_kernels *q8 = two ? tier->kernels->q8x2 : tier->kernels->q8;
        if (!q8) continue;
        for (int i = 0; i < 32; i++)
            x[i] = uniform(&seed) * (float)(1 + rep % 50);
        int8_t codes[64];
        float scale;
        int32_t comp[2];
        q8->quantize(x, 32, 1, codes, &scale, comp);
        for (int i = 0; i < 32; i++) {
            const double code = two ? 128.0 * codes[i] + codes[32 + i] : codes[i];
            const double back = code * scale;
            if (fabs(back - x[i]) > 0.5 * scale + fabs(x[i]) * 0x1p-23)
                fail_msg("%s, %d codes: x = %.9g comes back as %.9g (scale %.9g)", tier->name,
                         1 + two, x[i], back, scale);
        }
    }
}

int main(void)
{
    const compute_tier *found[FIXTURE_MAX_TIERS];
    n_tiers = fixture_tiers(found);
    for (int i = 0; i < n_tiers; i++)
        tiers[i] = (matmul_config){found[i]};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_kernels_are_the_reference),
        cmocka_unit_test(test_many_products_equal_single_calls),
        cmocka_unit_test(test_bf16_products_of_one_and_two_values),
        cmocka_unit_test(test_grid_does_not_change_a_row),
        cmocka_unit_test(test_quantiser),
        cmocka_unit_test(test_quantiser_precision),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
