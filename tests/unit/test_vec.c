/*
 * test_vec.c — the elementwise kernels (vec.h, vec_impl.h) of each compute
 * tier (tier_fixture.h): each against a plain double-precision reference;
 * the reductions bit-exact to the lane order vec.h documents, and every
 * result the same at every address; exp's accuracy over its whole range and
 * its -inf, underflow and NaN cases; NaN in max; every length from 0 to
 * 2·VEC_LANES + 1, with nothing outside [0, n) written (or, under ASan,
 * read). Every tier's code must give the bits the scalar order gives.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sanitizer/asan_interface.h>

#include "tier_fixture.h"
#include "vec.h"

/* The tier under test (main). */
static const vec_kernels *vk;

#define MAX_N   4096
#define GUARD   VEC_LANES           /* elements checked on each side of a vector */
#define CANARY  1234.5678f          /* what the guard elements hold */
#define LENGTHS (2 * VEC_LANES + 2) /* n = 0 .. 2·VEC_LANES + 1 */

static uint64_t rng = 1;

/* Uniform in [lo, hi). */
static float uniform(float lo, float hi)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((double)(rng >> 40) / (double)(1 << 24));
}

static void fill(float *x, int32_t n, float lo, float hi)
{
    for (int32_t i = 0; i < n; i++)
        x[i] = uniform(lo, hi);
}

/* A vector of n elements at an offset of `shift` floats from an aligned
 * start, with GUARD canaries on each side: a kernel that writes them fails
 * guarded_check, and under ASan (they are poisoned) one that reads them
 * fails at once. */
typedef struct {
    _Alignas(64) float mem[MAX_N + 2 * GUARD + VEC_LANES];
    int32_t shift, n;
} guarded;

static float *guarded_data(guarded *g)
{
    return g->mem + GUARD + g->shift;
}

static void guards_poison(guarded *g, int poison)
{
    float *x = guarded_data(g);
    const size_t bytes = GUARD * sizeof(float);
    if (poison) {
        ASAN_POISON_MEMORY_REGION(x - GUARD, bytes);
        ASAN_POISON_MEMORY_REGION(x + g->n, bytes);
    } else {
        ASAN_UNPOISON_MEMORY_REGION(g->mem, sizeof g->mem);
    }
}

static float *guarded_init(guarded *g, int32_t n, int32_t shift, const float *values)
{
    guards_poison(g, 0);
    g->shift = shift;
    g->n = n;
    for (size_t i = 0; i < sizeof g->mem / sizeof *g->mem; i++)
        g->mem[i] = CANARY;
    float *x = guarded_data(g);
    if (n) memcpy(x, values, (size_t)n * sizeof *x);
    guards_poison(g, 1);
    return x;
}

static void guarded_check(guarded *g)
{
    guards_poison(g, 0);
    const float *x = guarded_data(g);
    for (int32_t i = 1; i <= GUARD; i++)
        if (x[-i] != CANARY || x[g->n + i - 1] != CANARY)
            fail_msg("n = %d: a guard element was written", g->n);
}

/* Units in the last place of the float nearest to ref, between got and
 * ref. */
static double ulps(float got, double ref)
{
    int e;
    frexp(ref, &e);
    double ulp = ldexp(1.0, (e - 24 > -149 ? e - 24 : -149));
    return fabs((double)got - ref) / ulp;
}

/* ---- the documented reduction order, in scalar code ---- */

static double lane_fold_sum(double *acc)
{
    for (int w = VEC_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            acc[l] += acc[l + w];
    return acc[0];
}

static double lane_sum(const float *x, int32_t n, int squares)
{
    double acc[VEC_LANES] = {0};
    for (int32_t i = 0; i < n; i++)
        acc[i % VEC_LANES] += squares ? (double)x[i] * x[i] : (double)x[i];
    return lane_fold_sum(acc);
}

static float lane_max(const float *x, int32_t n)
{
    float m[VEC_LANES];
    for (int l = 0; l < VEC_LANES; l++)
        m[l] = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        m[i % VEC_LANES] = x[i] > m[i % VEC_LANES] ? x[i] : m[i % VEC_LANES];
    for (int w = VEC_LANES / 2; w >= 1; w /= 2)
        for (int l = 0; l < w; l++)
            m[l] = m[l + w] > m[l] ? m[l + w] : m[l];
    return m[0];
}

/* ---- every kernel at every short length and address ---- */

static float first_bits[6][MAX_N]; /* each kernel's output at shift 0 */

/* Runs every kernel on inputs of length n at a shift, checks the guards and
 * the references, and (shift > 0) that the bits equal those at shift 0. */
static void kernels_at(int32_t n, int32_t shift)
{
    float x[MAX_N], w[MAX_N], up[MAX_N];
    fill(x, n, -3, 3);
    fill(w, n, 0.5f, 1.5f);
    fill(up, n, -2, 2);
    static guarded gx, gy, gw, gu; /* not on the stack: their guards stay poisoned */
    float out[6][MAX_N];
    double sums[2];

    /* rmsnorm: y = x * (float)(1 / sqrt(sum/n + eps)) * w, the sum in lanes */
    const float eps = 1e-6f;
    float *xi = guarded_init(&gx, n, shift, x);
    float *yi = guarded_init(&gy, n, shift, up); /* overwritten */
    float *wi = guarded_init(&gw, n, shift, w);
    vk->rmsnorm(yi, xi, wi, n, eps);
    guarded_check(&gx);
    guarded_check(&gy);
    guarded_check(&gw);
    const float inv = (float)(1.0 / sqrt(lane_sum(x, n, 1) / n + eps));
    double sum_sq = 0;
    for (int32_t i = 0; i < n; i++)
        sum_sq += (double)x[i] * x[i];
    for (int32_t i = 0; i < n; i++) {
        assert_true(yi[i] == x[i] * inv * w[i]);
        const double ref = x[i] / sqrt(sum_sq / n + eps) * w[i];
        assert_true(fabs(yi[i] - ref) <= 4e-7 * fabs(ref) + 1e-30);
    }
    memcpy(out[0], yi, (size_t)n * sizeof *yi);

    /* exp_shifted over [max - 20, max], and its sum in lanes */
    float e[MAX_N];
    fill(e, n, -20, 0);
    const float mx = 0.25f;
    for (int32_t i = 0; i < n; i++)
        e[i] += mx;
    float *ei = guarded_init(&gx, n, shift, e);
    sums[0] = vk->exp_shifted(ei, n, mx);
    guarded_check(&gx);
    double ref_sum = 0;
    for (int32_t i = 0; i < n; i++) {
        const double ref = exp((double)(e[i] - mx));
        ref_sum += ref;
        if (ulps(ei[i], ref) > 2) fail_msg("exp(%.9g): %.9g, ref %.17g", e[i] - mx, ei[i], ref);
    }
    assert_true(sums[0] == lane_sum(ei, n, 0));
    assert_true(fabs(sums[0] - ref_sum) <= 1e-6 * ref_sum);
    memcpy(out[1], ei, (size_t)n * sizeof *ei);

    /* max */
    const float m = vk->max(guarded_init(&gx, n, shift, x), n);
    guarded_check(&gx);
    float ref_max = -INFINITY;
    for (int32_t i = 0; i < n; i++)
        ref_max = x[i] > ref_max ? x[i] : ref_max;
    assert_true(m == ref_max && m == lane_max(x, n));
    out[2][0] = m;

    /* scale, add: one float rounding per element */
    float *si = guarded_init(&gx, n, shift, x);
    vk->scale(si, n, 0.3f);
    guarded_check(&gx);
    float *di = guarded_init(&gu, n, shift, up);
    vk->add(di, guarded_init(&gw, n, shift, w), n);
    guarded_check(&gu);
    guarded_check(&gw);
    for (int32_t i = 0; i < n; i++) {
        assert_true(si[i] == x[i] * 0.3f);
        assert_true(di[i] == up[i] + w[i]);
        assert_true(ulps(si[i], (double)x[i] * 0.3f) <= 0.5);
        assert_true(ulps(di[i], (double)up[i] + w[i]) <= 0.5);
    }
    memcpy(out[3], si, (size_t)n * sizeof *si);
    memcpy(out[4], di, (size_t)n * sizeof *di);

    /* swiglu: g * sigmoid(g) * up */
    float *gi = guarded_init(&gx, n, shift, x);
    vk->swiglu(gi, guarded_init(&gu, n, shift, up), (size_t)n);
    guarded_check(&gx);
    guarded_check(&gu);
    for (int32_t i = 0; i < n; i++) {
        const double ref = x[i] / (1 + exp(-(double)x[i])) * up[i];
        if (!(fabs(gi[i] - ref) <= 1e-6 * fabs(ref) + 1e-30))
            fail_msg("swiglu(%.9g, %.9g) = %.9g, ref %.17g", x[i], up[i], gi[i], ref);
    }
    memcpy(out[5], gi, (size_t)n * sizeof *gi);

    for (int k = 0; k < 6; k++) {
        const size_t bytes = (size_t)(k == 2 ? 1 : n) * sizeof(float);
        if (shift == 0)
            memcpy(first_bits[k], out[k], bytes);
        else if (bytes && memcmp(first_bits[k], out[k], bytes) != 0)
            fail_msg("kernel %d, n = %d: other bits at a shift of %d floats", k, n, shift);
    }
}

/* Every length 0 .. 2·VEC_LANES + 1 and a few long ones, each at every
 * shift from an aligned address (the same seed per length). */
static void test_every_length_and_address(void **state)
{
    (void)state;
    const int32_t long_ones[] = {100, 1000, 1024 + 7, MAX_N};
    for (int32_t k = 0; k < LENGTHS + 4; k++) {
        const int32_t n = k < LENGTHS ? k : long_ones[k - LENGTHS];
        for (int32_t shift = 0; shift < VEC_LANES; shift++) {
            rng = 1000 + (uint64_t)n;
            kernels_at(n, shift);
        }
    }
}

/* Values over 60 binary orders of magnitude, so that a double sum of them
 * rounds and its order shows in the bits: the exp_shifted sum must be that
 * of the documented lane order, for every length and wherever the large
 * values sit (summing in index order differs in some of these cases), and
 * rmsnorm's output that of its lane-order sum (rounding the scale to
 * float hides the order but in rare cases). */
static void test_reductions_follow_the_lane_order(void **state)
{
    (void)state;
    const float scales[] = {1, 0x1p-15f, 0x1p-30f};
    const float exp_args[] = {0, -10.5f, -21, -42};
    int differs_from_index_order = 0;
    rng = 7;
    for (int32_t n = 1; n < LENGTHS + VEC_LANES; n++) {
        for (int draw = 0; draw < 40; draw++) {
            float x[LENGTHS + VEC_LANES], e[LENGTHS + VEC_LANES], y[LENGTHS + VEC_LANES];
            float w[LENGTHS + VEC_LANES];
            for (int32_t i = 0; i < n; i++) {
                const int k = (int)uniform(0, 3.999f);
                x[i] = uniform(1, 2) * scales[k % 3];
                e[i] = exp_args[k] - uniform(0, 1);
                w[i] = 1;
            }
            const double sum = vk->exp_shifted(e, n, 0);
            if (sum != lane_sum(e, n, 0))
                fail_msg("n = %d: sum %.17g, in lane order %.17g", n, sum, lane_sum(e, n, 0));
            double in_order = 0;
            for (int32_t i = 0; i < n; i++)
                in_order += e[i];
            differs_from_index_order += in_order != sum;

            vk->rmsnorm(y, x, w, n, 0);
            const float inv = (float)(1.0 / sqrt(lane_sum(x, n, 1) / n));
            for (int32_t i = 0; i < n; i++)
                if (y[i] != x[i] * inv)
                    fail_msg("rmsnorm, n = %d: element %d is %.9g, in lane order %.9g", n, i, y[i],
                             x[i] * inv);
        }
    }
    assert_true(differs_from_index_order > 0);
}

/* The lane order decides the last bits, as documented: one value of 1 and
 * small ones that each vanish next to it. Summed in index order they would
 * all be lost; in lanes, the small ones of the other lanes add up first. */
static void test_the_lane_order_decides(void **state)
{
    (void)state;
    const int32_t n = 2 * VEC_LANES;
    const float mx = 0;
    float x[2 * VEC_LANES], e[2 * VEC_LANES];
    for (int32_t i = 0; i < n; i++)
        x[i] = -38; /* exp(-38) = 3.1e-17 < half an ulp of 1 */
    x[0] = 0;
    memcpy(e, x, sizeof x);
    const double sum = vk->exp_shifted(e, n, mx);
    double in_order = 0;
    for (int32_t i = 0; i < n; i++)
        in_order += e[i];
    assert_true(in_order == 1.0);
    assert_true(sum == lane_sum(e, n, 0));
    assert_true(sum > 1.0);
    /* within lane 0 the 1 may sit at 0 or VEC_LANES: the same sum */
    x[0] = -38;
    x[VEC_LANES] = 0;
    memcpy(e, x, sizeof x);
    assert_true(vk->exp_shifted(e, n, mx) == sum);

    /* max of -0 and +0: the lane that holds the first one keeps it */
    float zeros[VEC_LANES + 1] = {0};
    zeros[0] = -0.0f;
    assert_true(signbit(vk->max(zeros, 2)) && !signbit(vk->max(zeros + 1, 2)));
    zeros[VEC_LANES] = -0.0f; /* in lane 0 after +0 (or -0): a later equal one never wins */
    assert_true(signbit(vk->max(zeros, VEC_LANES + 1)) == signbit(lane_max(zeros, VEC_LANES + 1)));
}

/* exp(x - max) for every argument from -87 to 0 in steps of 2^-12, and
 * beyond: exact 1 at 0, exact 0 below -87 and at -inf, NaN stays NaN. */
static void test_exp_range_and_specials(void **state)
{
    (void)state;
    static float x[(87 << 12) + 1];
    const int32_t n = (87 << 12) + 1;
    for (int32_t i = 0; i < n; i++)
        x[i] = -(float)i / 4096;
    vk->exp_shifted(x, n, 0);
    double worst = 0;
    float worst_at = 0;
    for (int32_t i = 0; i < n; i++) {
        const double u = ulps(x[i], exp(-(double)i / 4096));
        if (u > worst) worst = u, worst_at = -(float)i / 4096;
    }
    if (worst > 2) fail_msg("exp: %.2f ulp at %.9g", worst, worst_at);

    float special[] = {0, -0.0f, -87.0f, -87.5f, -100, -INFINITY, NAN, -FLT_MAX};
    const double sum = vk->exp_shifted(special, 8, 0);
    assert_true(special[0] == 1.0f && special[1] == 1.0f);
    assert_true(special[2] > 0 && ulps(special[2], exp(-87.0)) <= 2);
    assert_true(special[3] == 0 && special[4] == 0 && special[5] == 0 && special[7] == 0);
    assert_true(isnan(special[6]) && isnan(sum));
    /* the shift is done in float: exp(x - max) with a max of 100 */
    float shifted[] = {100, 99, -INFINITY};
    vk->exp_shifted(shifted, 3, 100);
    assert_true(shifted[0] == 1.0f && ulps(shifted[1], exp(-1.0)) <= 2 && shifted[2] == 0);
}

/* max skips NaN and gives -inf when no element is a number; rmsnorm of
 * zeros is zeros; swiglu is 0 far below zero and g·up far above. */
static void test_max_norm_and_swiglu_edges(void **state)
{
    (void)state;
    const float nan_first[] = {NAN, -5, 3, NAN, -INFINITY};
    assert_true(vk->max(nan_first, 5) == 3);
    float nan_in_lanes[2 * VEC_LANES + 3];
    for (int i = 0; i < 2 * VEC_LANES + 3; i++)
        nan_in_lanes[i] = i % VEC_LANES == 0 || i % 3 == 0 ? NAN : (float)-i;
    assert_true(vk->max(nan_in_lanes, 2 * VEC_LANES + 3) == -1);
    const float only_nan[] = {NAN, NAN};
    assert_true(vk->max(only_nan, 2) == -INFINITY);
    const float minus_inf[] = {-INFINITY, -INFINITY};
    assert_true(vk->max(minus_inf, 2) == -INFINITY);
    assert_true(vk->max(minus_inf, 0) == -INFINITY);

    float zeros[40] = {0}, y[40], w[40];
    for (int i = 0; i < 40; i++)
        w[i] = 1;
    vk->rmsnorm(y, zeros, w, 40, 1e-6f);
    for (int i = 0; i < 40; i++)
        assert_true(y[i] == 0);

    float g[] = {-100, -30, 0, 30, 100}, up[] = {2, 2, 2, 2, 2};
    vk->swiglu(g, up, 5);
    assert_true(fabs(g[0]) <= 1e-30 && fabs(g[1] + 60 * exp(-30.0)) <= 1e-6 * 60 * exp(-30.0));
    assert_true(g[2] == 0 && g[3] == 60 && g[4] == 200);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_length_and_address),
        cmocka_unit_test(test_reductions_follow_the_lane_order),
        cmocka_unit_test(test_the_lane_order_decides),
        cmocka_unit_test(test_exp_range_and_specials),
        cmocka_unit_test(test_max_norm_and_swiglu_edges),
    };
    const compute_tier *tiers[FIXTURE_MAX_TIERS];
    const int n_tiers = fixture_tiers(tiers);
    int failed = 0;
    for (int t = 0; t < n_tiers; t++) {
        vk = tiers[t]->kernels->vec;
        print_message("tier %s\n", tiers[t]->name);
        failed += cmocka_run_group_tests(tests, NULL, NULL);
    }
    return failed;
}
