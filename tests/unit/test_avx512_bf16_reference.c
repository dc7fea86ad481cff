/*
 * test_avx512_bf16_reference.c — the oracle of the avx512-bf16 tier's
 * self-check (compute/kernels_avx512_bf16_reference.c, the tier's
 * reference_block), on every CPU. Its VDPBF16PS lane against the CPU's own
 * vdpbf16ps where it has AVX-512 BF16, and against a model built another way — this
 * CPU's own fused multiply-add (vfmadd, FMA3) with MXCSR's DAZ and FTZ
 * set, round to nearest even, the odd products first — on random pairs of
 * every exponent (denormals, infinities and cancellations included) and on
 * chosen ones where the order of the two products or DAZ/FTZ decide the
 * bits; and its block (the tier's k pairs, odd k, a partial panel, x as
 * hi + lo) against the exact dot product in double, within the bound its
 * roundings allow.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <immintrin.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "cpu.h"
#include "half.h"
#include "matmul.h"
#include "tier.h"
#include "weights_pack.h"

static uint32_t seed = 1;

static uint32_t next(void)
{
    seed = seed * 1664525u + 1013904223u;
    return seed;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The model: acc + odd · odd, then + even · even, each one vfmadd231ss
 * under MXCSR with DAZ (bit 6) and FTZ (bit 15), round to nearest even.
 * make_fp32 is the bf16's bits in the upper half. */
__attribute__((target("fma"))) static float model_lane(float acc, uint32_t a, uint32_t b)
{
    const unsigned saved = _mm_getcsr();
    _mm_setcsr((saved & ~0x6000u) | 0x8040u);
    __m128 r = _mm_set_ss(acc);
    for (int e = 1; e >= 0; e--) {
        const float x = lms_bf16_to_f32((uint16_t)(a >> 16 * e));
        const float y = lms_bf16_to_f32((uint16_t)(b >> 16 * e));
        r = _mm_fmadd_ss(_mm_set_ss(x), _mm_set_ss(y), r);
    }
    const float out = _mm_cvtss_f32(r);
    _mm_setcsr(saved);
    return out;
}

/* The same bits, or both NaN (the reference does not model payloads). */
static void assert_same(float got, float want, float acc, uint32_t a, uint32_t b)
{
    if (isnan(got) && isnan(want)) return;
    if (f32_bits(got) != f32_bits(want))
        fail_msg("acc %a, a %08x, b %08x: reference %a, model %a", (double)acc, a, b, (double)got,
                 (double)want);
}

/* A bf16 of any bit pattern, or one near 2^e (e around the accumulator's,
 * so that the products round against it and cancel). */
static uint16_t bf16_value(int e)
{
    const uint32_t r = next();
    if (r % 4 == 0) return (uint16_t)(r >> 16);
    const int ex = e + (int)((r >> 8) % 13) - 6;
    const float m = (1.0f + (float)((r >> 16) & 0x7F) / 128.0f) * (r & 0x10 ? -1.0f : 1.0f);
    return lms_f32_to_bf16(ldexpf(m, ex));
}

static void test_lane_matches_the_cpus_fma_under_daz_and_ftz(void **state)
{
    (void)state;
    if (!__builtin_cpu_supports("fma")) fail_msg("the model needs FMA3");
    int differed_from_even_first = 0;
    for (int i = 0; i < 1000000; i++) {
        const uint32_t r = next();
        /* the accumulator: any f32 pattern, a denormal, or a value near 2^e */
        const int e = (int)(r % 300) - 150;
        float acc;
        if (r % 7 == 0) {
            const uint32_t u = next();
            memcpy(&acc, &u, sizeof acc);
        } else if (r % 7 == 1) {
            acc = ldexpf((float)(next() % 1000 + 1), -149 + (int)(next() % 10));
        } else {
            acc = ldexpf(1.0f + (float)(next() & 0xFFFFFF) / 0x1p24f, 2 * e / 3);
        }
        const int pe = e / 3;
        const uint32_t a = (uint32_t)bf16_value(pe) << 16 | bf16_value(pe);
        const uint32_t b = (uint32_t)bf16_value(pe) << 16 | bf16_value(pe);
        const float want = model_lane(acc, a, b);
        assert_same(kernel_vdpbf16ps_lane(acc, a, b), want, acc, a, b);
        /* the order is the SDM's: the even product first would differ */
        const uint32_t swap_a = a << 16 | a >> 16, swap_b = b << 16 | b >> 16;
        const float other = model_lane(acc, swap_a, swap_b);
        differed_from_even_first += !isnan(want) && f32_bits(other) != f32_bits(want);
    }
    print_message("cases where the order of the products changes the bits: %d of 1000000\n",
                  differed_from_even_first);
    assert_true(differed_from_even_first > 1000);
}

/* vdpbf16ps itself, 16 lanes at a time, on the same draws. */
__attribute__((target("avx512f,avx512bf16"))) static void
cpu_lanes(const float *acc, const uint32_t *a, const uint32_t *b, float *out)
{
    const __m512 r = _mm512_dpbf16_ps(_mm512_loadu_ps(acc), (__m512bh)_mm512_loadu_si512(a),
                                      (__m512bh)_mm512_loadu_si512(b));
    _mm512_storeu_ps(out, r);
}

/* Where the CPU has AVX-512 BF16, the reference lane is its instruction's
 * lane, bit for bit, on a million draws of every exponent (elsewhere the
 * model above is what can be checked: skipped). */
static void test_lane_is_the_cpus_vdpbf16ps(void **state)
{
    (void)state;
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    if (!cpu.avx512_bf16) {
        print_message("this CPU lacks AVX-512 BF16\n");
        skip();
    }
    for (int i = 0; i < 1000000 / 16; i++) {
        float acc[16], got[16];
        uint32_t a[16], b[16];
        for (int l = 0; l < 16; l++) {
            const uint32_t r = next();
            const int e = (int)(r % 300) - 150;
            if (r % 7 == 0) {
                const uint32_t u = next();
                memcpy(&acc[l], &u, sizeof acc[l]);
            } else {
                acc[l] = ldexpf(1.0f + (float)(next() & 0xFFFFFF) / 0x1p24f, 2 * e / 3);
            }
            a[l] = (uint32_t)bf16_value(e / 3) << 16 | bf16_value(e / 3);
            b[l] = (uint32_t)bf16_value(e / 3) << 16 | bf16_value(e / 3);
        }
        cpu_lanes(acc, a, b, got);
        for (int l = 0; l < 16; l++)
            assert_same(kernel_vdpbf16ps_lane(acc[l], a[l], b[l]), got[l], acc[l], a[l], b[l]);
    }
}

static void test_lane_chosen_cases(void **state)
{
    (void)state;
    const struct {
        float acc;
        uint32_t a, b;
    } cases[] = {
        /* 1 + 2^-24 (a tie: 1) then + 2^-24 (1 + 2^-7): 1 + 2^-23; the
         * even product first would give 1 + 2^-22 */
        {1.0f, 0x33803381u, 0x3F803F80u},
        {1.0f, 0x33813380u, 0x3F803F80u},
        /* a denormal bf16 input is a zero (DAZ): acc stays */
        {1.0f, 0x00400040u, 0x3F803F80u},
        /* a denormal accumulator is a zero (DAZ) */
        {0x1p-140f, 0x00000000u, 0x00000000u},
        /* 2^-63 · 2^-64 = 2^-127 is a zero of its sign (FTZ) */
        {0.0f, 0x00002000u, 0x00001F80u},
        {0.0f, 0x0000A000u, 0x00001F80u},
        /* cancellation to an exact zero is +0 (RNE) */
        {-1.0f, 0x00003F80u, 0x00003F80u},
        /* infinity times zero, and overflow */
        {0.0f, 0x7F800000u, 0x00000000u},
        {0x1p127f, 0x7F007F00u, 0x40004000u},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        assert_same(kernel_vdpbf16ps_lane(cases[i].acc, cases[i].a, cases[i].b),
                    model_lane(cases[i].acc, cases[i].a, cases[i].b), cases[i].acc, cases[i].a,
                    cases[i].b);
    assert_true(kernel_vdpbf16ps_lane(1.0f, 0x33803381u, 0x3F803F80u) == 1.0f + 0x1p-23f);
    assert_true(kernel_vdpbf16ps_lane(1.0f, 0x33813380u, 0x3F803F80u) == 1.0f + 0x1p-22f);
    assert_true(kernel_vdpbf16ps_lane(0x1p-140f, 0, 0) == 0.0f);
    assert_true(signbit(kernel_vdpbf16ps_lane(0.0f, 0x0000A000u, 0x00001F80u)));
    assert_true(kernel_vdpbf16ps_lane(0.0f, 0x0000A000u, 0x00001F80u) == 0.0f);
}

enum { ROWS = 11, K = 67, N = 37 };

/* The reference block over a BF16 matrix packed in the tier's pairs, x in
 * one bf16 value and in two: within the error of x as 8 or 16 bits (hi:
 * |x - hi| ≤ 2^-9 |x|; hi + lo: |x - hi - lo| ≤ 2^-17 |x|) and of 2k f32
 * roundings of a sum whose terms are at most Σ|x w|. */
static void test_block_is_the_dot_product(void **state)
{
    (void)state;
    const compute_tier *t = NULL;
    for (const compute_tier *const *row = compute_tiers; *row; row++)
        if (!strcmp((*row)->name, "avx512-bf16")) t = *row;
    assert_non_null(t);
    float x[ROWS * K], y[ROWS * N], w32[N * K];
    uint16_t w16[N * K];
    for (int i = 0; i < N * K; i++) {
        w16[i] = lms_f32_to_bf16(ldexpf((float)((int)(next() % 2001) - 1000), -10));
        w32[i] = lms_bf16_to_f32(w16[i]);
    }
    for (int i = 0; i < ROWS * K; i++)
        x[i] = ldexpf((float)((int)(next() % 2000001) - 1000000), -20);
    lms_weights w;
    void *buffer = NULL;
    lms_error err = {0};
    assert_int_equal(lms_weights_alloc(&w, LMS_DTYPE_BF16, LMS_WEIGHTS_BF16, N, K, &buffer, &err),
                     LMS_OK);
    compute_tier_own_layout(t, &w);
    const lms_pack_job job = {LMS_DTYPE_BF16, w16, &w, false};
    assert_int_equal(lms_pack_run(&job, 1, NULL, &err), LMS_OK);
    matmul_scratch *s = matmul_scratch_create(ROWS, K);
    assert_non_null(s);
    const matmul_config cfg = {t};
    for (int run = 0; run < 4; run++) {
        const int mode = run % 2;
        w.x_codes = 1 + run / 2;
        matmul_input in;
        matmul_prepare(&cfg, &w, x, ROWS, s, &in);
        for (int i = 0; i < ROWS * N; i++)
            y[i] = mode ? 1.0f : NAN;
        t->reference_block(t, &w, &in, 0, ROWS, 0, N, y, N,
                           mode ? KERNEL_ACCUMULATE : KERNEL_STORE);
        for (int r = 0; r < ROWS; r++)
            for (int c = 0; c < N; c++) {
                double exact = mode ? 1.0 : 0.0, mag = 1.0;
                for (int kk = 0; kk < K; kk++) {
                    exact += (double)x[r * K + kk] * w32[c * K + kk];
                    mag += fabs((double)x[r * K + kk] * w32[c * K + kk]);
                }
                const double x_error = w.x_codes == 2 ? 0x1p-17 : 0x1p-9;
                const double bound = mag * (x_error + (2.0 * K + 1) * 0x1p-24);
                if (!(fabs(y[r * N + c] - exact) <= bound))
                    fail_msg("x in %d values, [%d][%d]: %.9g, exact %.9g, bound %.3g",
                             (int)w.x_codes, r, c, (double)y[r * N + c], exact, bound);
            }
    }
    matmul_scratch_free(s);
    lms_free(buffer);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lane_matches_the_cpus_fma_under_daz_and_ftz),
        cmocka_unit_test(test_lane_chosen_cases),
        cmocka_unit_test(test_lane_is_the_cpus_vdpbf16ps),
        cmocka_unit_test(test_block_is_the_dot_product),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
