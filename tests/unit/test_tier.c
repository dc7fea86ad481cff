/*
 * test_tier.c — choosing a compute tier (compute/tier.c) and a matrix
 * tier's start-up self-check (compute/tier_proof.c), on every CPU: a copy
 * of the amx-emulated tier whose reference block is its own block stands
 * for a hardware tier. It proves itself; a forced mismatch (the test
 * hook), a refused enable, a fault of any kind in its self-check (a trap,
 * a wild write, SIGSEGV, SIGBUS, SIGFPE raised), a self-check that never
 * finishes, or an int8 product one ulp off make auto pass it over for the
 * next tier and keep why, and fail it when named; the process lives on.
 * auto never picks an emulation; the real amx tier is offered only where
 * the CPU has AMX. Every row of the table proves itself on this CPU, and
 * on the features of an AVX2 machine and of a bare x86-64: a row the CPU
 * runs as it is, any other with only what it lacks replaced by its
 * definition (the reference block, kernels_defined.h's families), so the
 * harness, packing, prepared input and reference of every row run here;
 * the definitions are the families' own bits where the CPU has them. A CPU said to have AVX-512
 * BF16 that lacks it drops the tier by its kernel's fault.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "kernels_defined.h"
#include "tier.h"

static const compute_tier *find(const char *name)
{
    for (const compute_tier *const *t = compute_tiers; *t; t++)
        if (!strcmp((*t)->name, name)) return *t;
    fail_msg("no tier %s", name);
    return NULL;
}

static lms_cpu_features cpu;
static compute_tier probe; /* a hardware matrix tier, as far as selection can tell */
static const compute_tier *table[3];

static int setup(void **state)
{
    (void)state;
    lms_cpu_detect(&cpu);
    if (!cpu.avx2) return -1; /* amx-emulated needs AVX2 */
    probe = *find("amx-emulated");
    probe.name = "probe";
    probe.emulated = false;
    probe.reference_block = find("amx-emulated")->block;
    table[0] = &probe;
    table[1] = find("avx2");
    table[2] = NULL;
    compute_tier_force_mismatch = false;
    return 0;
}

static void select_auto(const compute_tier *want, const char *dropped_has)
{
    const compute_tier *got = NULL;
    char dropped[200];
    lms_error err = {0};
    assert_int_equal(
        compute_tier_select_from(table, "auto", &cpu, &got, dropped, sizeof dropped, &err), LMS_OK);
    assert_ptr_equal(got, want);
    print_message("auto: %s; dropped: \"%s\"\n", got->name, dropped);
    if (dropped_has)
        assert_non_null(strstr(dropped, dropped_has));
    else
        assert_string_equal(dropped, "");
}

static void select_named_fails(const char *why_has)
{
    const compute_tier *got = NULL;
    lms_error err = {0};
    assert_int_equal(compute_tier_select_from(table, "probe", &cpu, &got, NULL, 0, &err),
                     LMS_ERR_UNSUPPORTED);
    assert_string_equal(err.field, "isa");
    assert_non_null(strstr(err.msg, why_has));
}

/* It passes; its CPU time is printed (here both sides run the emulation;
 * on an AMX host one of them runs the instructions). */
static void test_self_check_passes(void **state)
{
    (void)state;
    char why[200] = "";
    struct timespec start, end;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    assert_true(compute_tier_proves(&probe, why, sizeof why));
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end);
    print_message("self-check: %.1f ms of CPU\n", (double)(end.tv_sec - start.tv_sec) * 1e3 +
                                                      (double)(end.tv_nsec - start.tv_nsec) / 1e6);
    assert_true(compute_tier_proves(find("avx2"), why, sizeof why)); /* nothing to prove */
    select_auto(&probe, NULL);
}

static void test_forced_mismatch_drops_the_tier(void **state)
{
    (void)state;
    compute_tier_force_mismatch = true;
    char why[200] = "";
    assert_false(compute_tier_proves(&probe, why, sizeof why));
    assert_non_null(strstr(why, "probe's self-check differs from its reference"));
    select_auto(find("avx2"), "probe's self-check differs");
    select_named_fails("differs from its reference");
    compute_tier_force_mismatch = false;
    select_auto(&probe, NULL);
}

static bool refuse(char *why, size_t why_size)
{
    snprintf(why, why_size, "probe: refused by the test");
    return false;
}

static void test_refused_enable_drops_the_tier(void **state)
{
    (void)state;
    probe.enable = refuse;
    select_auto(find("avx2"), "refused by the test");
    select_named_fails("refused by the test");
    probe.enable = NULL;
}

/* A kernel that faults: ud2, as a tile instruction the OS did not enable. */
static void trap_block(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                       int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                       kernel_mode mode)
{
    (void)tier, (void)w, (void)in, (void)r0, (void)r1, (void)c0, (void)c1, (void)y, (void)ldy,
        (void)mode;
    __builtin_trap();
}

/* A kernel that writes through a wild pointer. */
static void wild_write_block(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                             int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                             kernel_mode mode)
{
    (void)tier, (void)w, (void)in, (void)r0, (void)r1, (void)c0, (void)c1, (void)y, (void)ldy,
        (void)mode;
    volatile float *volatile wild = (float *)16;
    *wild = 1.0f;
}

static void test_fault_drops_the_tier(void **state)
{
    (void)state;
    probe.block = trap_block;
    select_auto(find("avx2"), "probe faulted (Illegal instruction) in its self-check");
    select_named_fails("probe faulted (Illegal instruction)");
    probe.block = wild_write_block;
    select_auto(find("avx2"), "probe faulted (Segmentation fault) in its self-check");
    probe.block = find("amx-emulated")->block;
    /* the fault in the reference's part of the check is caught the same way */
    probe.reference_block = wild_write_block;
    select_auto(find("avx2"), "probe faulted (Segmentation fault)");
    probe.reference_block = find("amx-emulated")->block;
    const struct {
        int sig;
        const char *why;
    } raised[] = {
        {SIGSEGV, "probe faulted (Segmentation fault) in its self-check"},
        {SIGBUS, "probe faulted (Bus error) in its self-check"},
        {SIGFPE, "probe faulted (Floating point exception) in its self-check"},
        {SIGILL, "probe faulted (Illegal instruction) in its self-check"},
        {SIGABRT, "probe faulted (Aborted) in its self-check"},
    };
    for (size_t i = 0; i < sizeof raised / sizeof *raised; i++) {
        compute_tier_proof_signal = raised[i].sig;
        select_auto(find("avx2"), raised[i].why);
    }
    compute_tier_proof_signal = 0;
    select_auto(&probe, NULL);
}

/* A self-check that never answers is stopped at its bound. */
static void test_hung_self_check_drops_the_tier(void **state)
{
    (void)state;
    compute_tier_proof_signal = -1;
    compute_tier_proof_seconds = 1;
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    select_auto(find("avx2"), "probe did not finish its self-check within 1 s");
    clock_gettime(CLOCK_MONOTONIC, &end);
    const double took =
        (double)(end.tv_sec - start.tv_sec) + (double)(end.tv_nsec - start.tv_nsec) / 1e9;
    print_message("stopped after %.2f s\n", took);
    assert_true(took >= 1.0 && took < 10.0);
    compute_tier_proof_signal = 0;
    compute_tier_proof_seconds = 20;
    select_auto(&probe, NULL);
}

/* amx-emulated's kernels, but the int8 tiles' result one ulp off in one
 * element for Q8 matrices of the given number of x codes, of signed codes
 * or of biased ones (a small bias, or 0 with offsets): a CPU whose
 * tdpbssd or tdpbsud, or a kernel whose scaling, differs only there. */
static int32_t off_codes;
static bool off_signed;

static void int8_off_block(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                           int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                           kernel_mode mode)
{
    find("amx-emulated")->block(tier, w, in, r0, r1, c0, c1, y, ldy, mode);
    if (w->format == LMS_WEIGHTS_Q8 && w->x_codes == off_codes &&
        w->layout.signed_codes == off_signed)
        y[ldy + 1] = nextafterf(y[ldy + 1], 1e30f);
}

static void test_int8_mismatch_drops_the_tier(void **state)
{
    (void)state;
    probe.block = int8_off_block;
    const struct {
        int32_t codes;
        bool signed_codes;
        const char *why;
    } cases[] = {
        {1, true, "differs from its reference at [1][1] of f32 as q8 (x in 1"},
        {2, true, "differs from its reference at [1][1] of f32 as q8 (x in 2"},
        {1, false, "differs from its reference at [1][1] of q6_K as q8 (x in 1"},
        {2, false, "differs from its reference at [1][1] of q6_K as q8 (x in 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        off_codes = cases[i].codes;
        off_signed = cases[i].signed_codes;
        select_auto(find("avx2"), cases[i].why);
    }
    probe.block = find("amx-emulated")->block;
    select_auto(&probe, NULL);
}

static void test_auto_never_picks_an_emulation(void **state)
{
    (void)state;
    const compute_tier *got = NULL;
    char dropped[200];
    lms_error err = {0};
    assert_int_equal(compute_tier_select("auto", &cpu, &got, dropped, sizeof dropped, &err),
                     LMS_OK);
    assert_false(got->emulated);
    assert_int_equal(compute_tier_select("amx-emulated", &cpu, &got, NULL, 0, &err), LMS_OK);
    assert_string_equal(got->name, "amx-emulated");
}

/* The real amx tier: where the CPU lacks AMX it is refused by name with
 * what it needs; where it has AMX, it is offered or says why not. */
static void test_amx_only_where_the_cpu_has_it(void **state)
{
    (void)state;
    const compute_tier *got = NULL;
    lms_error err = {0};
    const lms_status st = compute_tier_select("amx", &cpu, &got, NULL, 0, &err);
    print_message("amx on this CPU: %s\n", st == LMS_OK ? "offered" : err.msg);
    if (!cpu.amx) {
        assert_int_equal(st, LMS_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "which this CPU lacks"));
    }
}

/* The tier under test with its family replaced by the definitions: what
 * defined_block multiplies with (a global: the self-check's child
 * inherits it). */
static compute_tier defined_twin;
static defined_family twin_family;

static void defined_block(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                          int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                          kernel_mode mode)
{
    (void)tier;
    defined_twin.block(&defined_twin, w, in, r0, r1, c0, c1, y, ldy, mode);
}

/* The definitions are the families' arithmetic: every family this CPU
 * runs (with 16-bit and Q8 kernels) proves itself against its
 * definitions through the self-check's problems — BF16 through the 16-bit
 * kernel, every Q8 layout with x in one and two codes, input prepared by
 * the real family's quantiser. */
static void test_definitions_are_the_families_bits(void **state)
{
    (void)state;
    const kernel_family *families[] = {&kernel_family_avx512_vnni, &kernel_family_avx512,
                                       &kernel_family_avx2};
    int checked = 0;
    for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
        if (!families[i]->runs_on(&cpu)) continue;
        compute_tier real = *find("avx2");
        real.name = families[i]->isa;
        real.kernels = families[i];
        define_family(families[i], &twin_family);
        defined_twin = real;
        defined_twin.kernels = &twin_family.family;
        real.reference_block = defined_block;
        char why[240] = "";
        if (!compute_tier_proves(&real, why, sizeof why)) fail_msg("%s", why);
        print_message("family %s: the definitions' bits\n", families[i]->isa);
        checked++;
    }
    assert_true(checked > 0);
}

/* Every row of the table proves itself on a CPU with the features of
 * view (this CPU's, or fewer): as it is where view runs it (no other
 * outcome is accepted); else with what view lacks replaced by its
 * definition, so that its harness, packing, prepared input and reference
 * run under the sanitizers. */
static void prove_every_row(const lms_cpu_features *view, const char *view_name)
{
    for (const compute_tier *const *row = compute_tiers; *row; row++) {
        const compute_tier *t = *row;
        char why[240] = "";
        if (!t->reference_block) {
            print_message("%s on %s: nothing to prove\n", t->name, view_name);
            continue;
        }
        if (t->runs_on(view) && (!t->enable || t->enable(why, sizeof why))) {
            if (!compute_tier_proves(t, why, sizeof why))
                fail_msg("%s on %s: %s", t->name, view_name, why);
            print_message("%s on %s: proved, as it is\n", t->name, view_name);
            continue;
        }
        compute_tier copy = *t;
        copy.block = t->reference_block;
        defined_family defined;
        const bool family_defined = !t->kernels->runs_on(view);
        if (family_defined) {
            define_family(t->kernels, &defined);
            copy.kernels = &defined.family;
        }
        if (!compute_tier_proves(&copy, why, sizeof why))
            fail_msg("%s on %s: %s", t->name, view_name, why);
        print_message("%s on %s: proved with its reference block%s\n", t->name, view_name,
                      family_defined ? " and its family's definitions" : "");
    }
}

/* On this CPU, on an AVX2 machine's features, and on a bare x86-64's. */
static void test_every_tier_proves_itself(void **state)
{
    (void)state;
    prove_every_row(&cpu, "this CPU");
    lms_cpu_features avx2 = {.avx2 = cpu.avx2}, bare = {0};
    prove_every_row(&avx2, "AVX2 only");
    prove_every_row(&bare, "x86-64 only");
}

/* The real avx512-bf16 row on a CPU said to have AVX-512 BF16: where the
 * CPU lacks it, its kernel faults (SIGILL) in the self-check and auto
 * takes the next tier, keeping why; where the CPU has it, auto takes it. */
static void test_avx512_bf16_on_a_cpu_said_to_have_it(void **state)
{
    (void)state;
    lms_cpu_features said = cpu;
    said.avx512_bf16 = true;
    const compute_tier *const tiers[] = {find("avx512-bf16"), find("avx2"), NULL};
    const compute_tier *got = NULL;
    char dropped[200] = "";
    lms_error err = {0};
    assert_int_equal(
        compute_tier_select_from(tiers, "auto", &said, &got, dropped, sizeof dropped, &err),
        LMS_OK);
    print_message("auto on a CPU said to have AVX-512 BF16: %s; dropped: \"%s\"\n", got->name,
                  dropped);
    if (cpu.avx512_bf16) {
        assert_ptr_equal(got, find("avx512-bf16"));
        assert_string_equal(dropped, "");
    } else {
        assert_ptr_equal(got, find("avx2"));
        assert_non_null(strstr(dropped, "avx512-bf16 faulted (Illegal instruction)"));
        assert_int_equal(compute_tier_select("avx512-bf16", &cpu, &got, NULL, 0, &err),
                         LMS_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "needs AVX-512 F, BW, VL, VNNI and BF16"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_check_passes),
        cmocka_unit_test(test_forced_mismatch_drops_the_tier),
        cmocka_unit_test(test_refused_enable_drops_the_tier),
        cmocka_unit_test(test_fault_drops_the_tier),
        cmocka_unit_test(test_hung_self_check_drops_the_tier),
        cmocka_unit_test(test_int8_mismatch_drops_the_tier),
        cmocka_unit_test(test_auto_never_picks_an_emulation),
        cmocka_unit_test(test_amx_only_where_the_cpu_has_it),
        cmocka_unit_test(test_definitions_are_the_families_bits),
        cmocka_unit_test(test_every_tier_proves_itself),
        cmocka_unit_test(test_avx512_bf16_on_a_cpu_said_to_have_it),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
