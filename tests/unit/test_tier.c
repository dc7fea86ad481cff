/*
 * test_tier.c — choosing a compute tier (compute/tier.c) and a matrix
 * tier's start-up self-check (compute/tier_proof.c), on every CPU: a copy
 * of the amx-emulated tier that must prove itself against amx-emulated
 * stands for a hardware tier. It proves itself; a forced mismatch (the
 * test hook), a refused enable, a fault in its kernel or an int8 product
 * one ulp off make auto pass it over for the next tier and keep why, and
 * fail it when named; auto never picks an emulation; the real amx tier is
 * offered only where the CPU has AMX. The avx512-bf16 tier (which no
 * machine here runs) is dropped on a forced mismatch with its plain-C
 * reference, and on a CPU that claims AVX-512 BF16 without it, by its
 * kernel's fault in the self-check.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

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
    probe.proven_against = find("amx-emulated");
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
    assert_non_null(strstr(why, "probe's self-check differs from amx-emulated"));
    select_auto(find("avx2"), "probe's self-check differs");
    select_named_fails("differs from amx-emulated");
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

static void test_fault_drops_the_tier(void **state)
{
    (void)state;
    probe.block = trap_block;
    select_auto(find("avx2"), "probe faulted");
    probe.block = find("amx-emulated")->block;
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
        {1, true, "differs from amx-emulated at [1][1] of f32 as q8 (x in 1"},
        {2, true, "differs from amx-emulated at [1][1] of f32 as q8 (x in 2"},
        {1, false, "differs from amx-emulated at [1][1] of q6_K as q8 (x in 1"},
        {2, false, "differs from amx-emulated at [1][1] of q6_K as q8 (x in 2"},
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

/* avx512-bf16 against its reference: a copy of the reference that must
 * prove itself against it (the check's BF16 problem through the plain C on
 * both sides) passes, and with the forced mismatch is dropped for the
 * next tier. */
static void test_avx512_bf16_mismatch_drops_the_tier(void **state)
{
    (void)state;
    const compute_tier *ref = &compute_tier_avx512_bf16_reference;
    compute_tier bf16 = *ref;
    bf16.name = "avx512-bf16 probe";
    bf16.emulated = false;
    bf16.proven_against = ref;
    const compute_tier *const tiers[] = {&bf16, find("avx2"), NULL};
    const compute_tier *got = NULL;
    char dropped[200] = "";
    lms_error err = {0};
    assert_int_equal(
        compute_tier_select_from(tiers, "auto", &cpu, &got, dropped, sizeof dropped, &err), LMS_OK);
    assert_ptr_equal(got, &bf16);
    assert_string_equal(dropped, "");
    compute_tier_force_mismatch = true;
    assert_int_equal(
        compute_tier_select_from(tiers, "auto", &cpu, &got, dropped, sizeof dropped, &err), LMS_OK);
    compute_tier_force_mismatch = false;
    print_message("auto: %s; dropped: \"%s\"\n", got->name, dropped);
    assert_ptr_equal(got, find("avx2"));
    assert_non_null(
        strstr(dropped, "avx512-bf16 probe's self-check differs from avx512-bf16-reference"));
    assert_non_null(strstr(dropped, "of bf16 as bf16"));
}

/* The real avx512-bf16 tier on a CPU said to have AVX-512 BF16: where it
 * has it, it proves itself (or says why not); where it lacks it, its
 * kernel faults (SIGILL) in the self-check, and auto takes the next tier
 * and keeps why. Named on this CPU, it is refused for what it needs. */
static void test_avx512_bf16_is_guarded_by_its_self_check(void **state)
{
    (void)state;
    lms_cpu_features said = cpu;
    said.avx512 = said.avx512_vnni = said.avx512_bf16 = true;
    const compute_tier *const tiers[] = {find("avx512-bf16"), find("avx2"), NULL};
    const compute_tier *got = NULL;
    char dropped[200] = "";
    lms_error err = {0};
    assert_int_equal(
        compute_tier_select_from(tiers, "auto", &said, &got, dropped, sizeof dropped, &err),
        LMS_OK);
    print_message("auto on a CPU said to have AVX-512 BF16: %s; dropped: \"%s\"\n", got->name,
                  dropped);
    if (!cpu.avx512_bf16) {
        assert_ptr_equal(got, find("avx2"));
        assert_non_null(strstr(dropped, "avx512-bf16 faulted (Illegal instruction)"));
        assert_int_equal(compute_tier_select("avx512-bf16", &cpu, &got, NULL, 0, &err),
                         LMS_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "needs AVX-512 F, BW, VL, VNNI and BF16"));
    } else if (got != find("avx512-bf16")) {
        assert_non_null(strstr(dropped, "avx512-bf16"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_check_passes),
        cmocka_unit_test(test_forced_mismatch_drops_the_tier),
        cmocka_unit_test(test_refused_enable_drops_the_tier),
        cmocka_unit_test(test_fault_drops_the_tier),
        cmocka_unit_test(test_int8_mismatch_drops_the_tier),
        cmocka_unit_test(test_auto_never_picks_an_emulation),
        cmocka_unit_test(test_amx_only_where_the_cpu_has_it),
        cmocka_unit_test(test_avx512_bf16_mismatch_drops_the_tier),
        cmocka_unit_test(test_avx512_bf16_is_guarded_by_its_self_check),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
