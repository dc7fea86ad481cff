/*
 * test_tile.c — the tile layer's emulation (compute/tile_emulated.c)
 * against results computed by hand from the SDM's pseudo-code: loads and
 * stores by configured shape, the VNNI pair and quad layouts of B,
 * tdpbf16ps' two temporaries per column (even and odd elements of the
 * pairs) added to C at the end, its DAZ, FTZ and round-to-nearest-even,
 * int8 dot products that wrap, and a shape the hardware refuses aborting.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tile.h"

enum { C = 0, A = 1, B = 2 };

static uint16_t bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (uint16_t)(u >> 16); /* the test's values are exact in bf16 */
}

static float f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* C: 1 × cols f32; A: 1 × pairs; B: pairs × cols (a dword per column). */
static void configure(int rows, int pairs, int cols)
{
    tile_config cfg = {.palette = 1};
    cfg.rows[C] = (uint8_t)rows;
    cfg.colsb[C] = (uint16_t)(4 * cols);
    cfg.rows[A] = (uint8_t)rows;
    cfg.colsb[A] = (uint16_t)(4 * pairs);
    cfg.rows[B] = (uint8_t)pairs;
    cfg.colsb[B] = (uint16_t)(4 * cols);
    tile_configure(&cfg);
}

/* One row, one column: C = c0 + dot(a, b) over n bf16 values (n even),
 * b given in k order (one column: the pair layout is k order). */
static float dot1(float c0, const float *a, const float *b, int n)
{
    configure(1, n / 2, 1);
    uint16_t ta[32], tb[32];
    for (int i = 0; i < n; i++) {
        ta[i] = bf16(a[i]);
        tb[i] = bf16(b[i]);
    }
    tile_load(C, &c0, 4);
    tile_load(A, ta, 64);
    tile_load(B, tb, 4); /* row r: the pair (2r, 2r+1) */
    tile_dpbf16ps(C, A, B);
    float out;
    tile_store(C, &out, 4);
    tile_release();
    return out;
}

static void test_load_store_by_shape(void **state)
{
    (void)state;
    tile_config cfg = {.palette = 1};
    cfg.rows[3] = 2;
    cfg.colsb[3] = 8;
    tile_configure(&cfg);
    uint8_t src[3][16], dst[3][16];
    for (int i = 0; i < 48; i++)
        src[i / 16][i % 16] = (uint8_t)(i + 1);
    memset(dst, 0xEE, sizeof dst);
    tile_load(3, src, 16);
    tile_store(3, dst, 16);
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 16; j++)
            assert_int_equal(dst[r][j], r < 2 && j < 8 ? src[r][j] : 0xEE);
    tile_zero(3);
    tile_store(3, dst, 16);
    assert_int_equal(dst[0][0], 0);
    assert_int_equal(dst[1][7], 0);
    tile_release();
}

/* 2 rows × 2 columns × 2 pairs, every element distinct: B's row k holds
 * pair k of each column side by side. */
static void test_bf16_pair_layout(void **state)
{
    (void)state;
    configure(2, 2, 2);
    const float a[2][4] = {{1, 2, 3, 4}, {-1, 0.5f, 2, 8}};
    /* column 0 over k: 5 6 7 8; column 1: 1 -1 2 -2 */
    const float b[2][4] = {{5, 6, 1, -1}, {7, 8, 2, -2}};
    uint16_t ta[2][4], tb[2][4];
    for (int i = 0; i < 8; i++) {
        ta[i / 4][i % 4] = bf16(a[i / 4][i % 4]);
        tb[i / 4][i % 4] = bf16(b[i / 4][i % 4]);
    }
    const float c0[2][2] = {{100, 0}, {0, -1}};
    float out[2][2];
    tile_load(C, c0, 8);
    tile_load(A, ta, 8);
    tile_load(B, tb, 8);
    tile_dpbf16ps(C, A, B);
    tile_store(C, out, 8);
    tile_release();
    /* C[m][n] + (even elements' chain + odd elements' chain) */
    assert_true(out[0][0] == 170.0f);
    assert_true(out[0][1] == 0 + (1 * 1 + 3 * 2) + (2 * -1 + 4 * -2));
    assert_true(out[1][0] == (-1 * 5 + 2 * 7) + (0.5f * 6 + 8 * 8));
    assert_true(out[1][1] == -1 + ((-1 * 1 + 2 * 2) + (0.5f * -1 + 8 * -2)));
}

/* The SDM's order: even and odd elements in two chains, summed at the
 * end. With a = (2^24, 1, -2^24, 1) and b all 1: even 2^24 - 2^24 = 0,
 * odd 1 + 1 = 2, so 2; one chain over the pairs in order (the intrinsics
 * guide's form) would lose the first 1 to rounding and give 1. */
static void test_bf16_even_and_odd_chains(void **state)
{
    (void)state;
    const float a[4] = {0x1p24f, 1, -0x1p24f, 1}, b[4] = {1, 1, 1, 1};
    assert_true(dot1(0, a, b, 4) == 2.0f);
}

/* DAZ on bf16 inputs, FTZ on results, nearest even. */
static void test_bf16_denormals_and_rounding(void **state)
{
    (void)state;
    /* bf16 0x0001 (2^-133) · 2^100 would be 2^-33: counted as 0 · 2^100 */
    float a[2] = {f32(0x00010000), 0}, b[2] = {0x1p100f, 0};
    assert_true(dot1(0, a, b, 2) == 0.0f);
    /* 2^-70 · 2^-70 = 2^-140 is subnormal in f32: flushed (to -0 in the
     * even chain, which the odd chain's +0 makes +0) */
    a[0] = -0x1p-70f;
    b[0] = 0x1p-70f;
    const float z = dot1(0, a, b, 2);
    assert_true(z == 0.0f && !signbit(z));
    a[0] = 0x1p-50f; /* 2^-120: normal, kept */
    assert_true(dot1(0, a, b, 2) == 0x1p-120f);
    /* 1 + 2^-24 is a tie: to even, 1; 1 + 3·2^-24 a tie: to even, 1 + 2^-22 */
    a[0] = 0x1p-24f;
    b[0] = 1;
    assert_true(dot1(1, a, b, 2) == 1.0f);
    a[0] = 0x1.8p-23f;
    assert_true(dot1(1, a, b, 2) == 1.0f + 0x1p-22f);
}

/* Quads: C += Σ of four byte products per dword, A and B each signed or
 * unsigned as the mnemonic says (tdpbssd, tdpbusd, tdpbsud), 32-bit
 * wrap-around. */
static void test_int8_quads(void **state)
{
    (void)state;
    tile_config cfg = {.palette = 1};
    cfg.rows[C] = cfg.rows[A] = cfg.rows[B] = 1;
    cfg.colsb[C] = cfg.colsb[A] = cfg.colsb[B] = 4;
    tile_configure(&cfg);
    const int8_t a[4] = {-1, 2, -3, 4}, b[4] = {5, -6, 7, -8};
    int32_t c = 0, out;
    tile_load(C, &c, 4);
    tile_load(A, a, 4);
    tile_load(B, b, 4);
    tile_dpbssd(C, A, B);
    tile_store(C, &out, 4);
    assert_int_equal(out, -5 - 12 - 21 - 32);
    tile_zero(C);
    tile_dpbusd(C, A, B); /* a as unsigned: 255, 2, 253, 4 */
    tile_store(C, &out, 4);
    assert_int_equal(out, 255 * 5 - 12 + 253 * 7 - 32);
    tile_zero(C);
    tile_dpbsud(C, A, B); /* b as unsigned: 5, 250, 7, 248 */
    tile_store(C, &out, 4);
    assert_int_equal(out, -5 + 2 * 250 - 21 + 4 * 248);
    c = INT32_MAX;
    const int8_t one[4] = {1, 0, 0, 0};
    tile_load(C, &c, 4);
    tile_load(A, one, 4);
    tile_load(B, one, 4);
    tile_dpbssd(C, A, B);
    tile_store(C, &out, 4);
    assert_int_equal(out, INT32_MIN);
    tile_release();
}

/* B with more rows than A has dwords: the hardware raises #UD; the
 * emulation aborts. */
static void test_bad_shape_aborts(void **state)
{
    (void)state;
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        tile_config cfg = {.palette = 1};
        cfg.rows[C] = cfg.rows[A] = 1;
        cfg.colsb[C] = cfg.colsb[A] = 4;
        cfg.rows[B] = 2;
        cfg.colsb[B] = 4;
        tile_configure(&cfg);
        tile_dpbf16ps(C, A, B);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_store_by_shape),
        cmocka_unit_test(test_bf16_pair_layout),
        cmocka_unit_test(test_bf16_even_and_odd_chains),
        cmocka_unit_test(test_bf16_denormals_and_rounding),
        cmocka_unit_test(test_int8_quads),
        cmocka_unit_test(test_bad_shape_aborts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
