/*
 * test_ggml_blocks.c — the block decoders (engine/ggml_blocks.c) on blocks
 * packed here from ggml-common.h's layouts, with values chosen so that
 * every product and sum is exact: each element must come out as its level
 * times its scale minus its offset, which pins down which bits of which
 * byte belong to which element. Also: the geometry of every type, and
 * decoding from an odd address. (tests/ggml compares the same decoders
 * with ggml itself on random blocks.)
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "ggml_blocks.h"

#define F16_ONE     0x3C00 /* 1.0 */
#define F16_HALF    0x3800 /* 0.5 */
#define F16_QUARTER 0x3400 /* 0.25 */
#define F16_EIGHTH  0x3000 /* 0.125 */
#define F16_M_ONE   0xBC00 /* -1.0 */

static void put_u16(unsigned char *p, uint16_t v)
{
    p[0] = (unsigned char)(v & 0xff);
    p[1] = (unsigned char)(v >> 8);
}

/* Decodes one block and compares every element with expected[], both
 * from an aligned buffer and from one byte past it. */
static void expect_block(lms_dtype type, const unsigned char *block, const float *expected)
{
    const size_t bytes = lms_dtype_block_bytes(type), n = lms_dtype_block_elements(type);
    float out[256];
    lms_ggml_blocks_to_f32(type, block, 1, out);
    for (size_t i = 0; i < n; i++)
        if (out[i] != expected[i])
            fail_msg("%s element %zu: %g, expected %g", lms_dtype_name(type), i, (double)out[i],
                     (double)expected[i]);
    unsigned char shifted[256 + 1];
    memcpy(shifted + 1, block, bytes);
    float again[256];
    lms_ggml_blocks_to_f32(type, shifted + 1, 1, again);
    assert_memory_equal(again, out, n * sizeof *out);
}

static void test_geometry(void **state)
{
    (void)state;
    const struct {
        lms_dtype type;
        const char *name;
        size_t elements, bytes;
    } want[] = {
        {LMS_DTYPE_F32, "f32", 1, 4},       {LMS_DTYPE_F16, "f16", 1, 2},
        {LMS_DTYPE_BF16, "bf16", 1, 2},     {LMS_DTYPE_Q4_0, "q4_0", 32, 18},
        {LMS_DTYPE_Q4_1, "q4_1", 32, 20},   {LMS_DTYPE_Q5_0, "q5_0", 32, 22},
        {LMS_DTYPE_Q5_1, "q5_1", 32, 24},   {LMS_DTYPE_Q8_0, "q8_0", 32, 34},
        {LMS_DTYPE_Q4_K, "q4_K", 256, 144}, {LMS_DTYPE_Q5_K, "q5_K", 256, 176},
        {LMS_DTYPE_Q6_K, "q6_K", 256, 210},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_string_equal(lms_dtype_name(want[i].type), want[i].name);
        assert_int_equal(lms_dtype_block_elements(want[i].type), want[i].elements);
        assert_int_equal(lms_dtype_block_bytes(want[i].type), want[i].bytes);
    }
}

/* Q4_0 / Q4_1: byte j holds element j (low nibble) and j + 16 (high). */
static void test_q4_0_and_q4_1(void **state)
{
    (void)state;
    unsigned char b0[18], b1[20];
    float e0[32], e1[32];
    put_u16(b0, F16_QUARTER);
    put_u16(b1, F16_HALF);
    put_u16(b1 + 2, F16_M_ONE);
    for (int j = 0; j < 16; j++) {
        const int lo = j, hi = (5 * j + 3) % 16;
        b0[2 + j] = b1[4 + j] = (unsigned char)(lo | hi << 4);
        e0[j] = (float)(lo - 8) * 0.25f;
        e0[j + 16] = (float)(hi - 8) * 0.25f;
        e1[j] = (float)lo * 0.5f - 1.0f;
        e1[j + 16] = (float)hi * 0.5f - 1.0f;
    }
    expect_block(LMS_DTYPE_Q4_0, b0, e0);
    expect_block(LMS_DTYPE_Q4_1, b1, e1);
}

/* Q5_0 / Q5_1: as Q4, with element j's fifth bit at bit j of the
 * little-endian u32 before the nibbles. */
static void test_q5_0_and_q5_1(void **state)
{
    (void)state;
    unsigned char b0[22], b1[24];
    float e0[32], e1[32];
    const uint32_t high = 0xC3A5F00Fu;
    put_u16(b0, F16_ONE);
    put_u16(b1, F16_QUARTER);
    put_u16(b1 + 2, F16_HALF);
    for (int k = 0; k < 4; k++)
        b0[2 + k] = b1[4 + k] = (unsigned char)(high >> (8 * k));
    for (int j = 0; j < 16; j++) {
        const int lo = (3 * j + 1) % 16, hi = 15 - j;
        b0[6 + j] = b1[8 + j] = (unsigned char)(lo | hi << 4);
        const int v_lo = lo | (int)((high >> j) & 1) << 4;
        const int v_hi = hi | (int)((high >> (j + 16)) & 1) << 4;
        e0[j] = (float)(v_lo - 16);
        e0[j + 16] = (float)(v_hi - 16);
        e1[j] = (float)v_lo * 0.25f + 0.5f;
        e1[j + 16] = (float)v_hi * 0.25f + 0.5f;
    }
    expect_block(LMS_DTYPE_Q5_0, b0, e0);
    expect_block(LMS_DTYPE_Q5_1, b1, e1);
}

static void test_q8_0(void **state)
{
    (void)state;
    unsigned char b[34];
    float e[32];
    put_u16(b, F16_EIGHTH);
    for (int j = 0; j < 32; j++) {
        const int q = j * 8 - 128;
        b[2 + j] = (unsigned char)(int8_t)q;
        e[j] = (float)q * 0.125f;
    }
    expect_block(LMS_DTYPE_Q8_0, b, e);
}

/* Q4_K / Q5_K's 12 scale bytes: sub-block s's 6-bit scale and min; s < 4
 * in bytes s and s + 4, s >= 4 as the nibbles of byte s + 4 under the top
 * two bits of bytes s - 4 (scale) and s (min). */
static void pack_k_scales(const int *sc, const int *m, unsigned char *scales)
{
    memset(scales, 0, 12);
    for (int s = 0; s < 4; s++) {
        scales[s] = (unsigned char)(sc[s] | (sc[s + 4] >> 4) << 6);
        scales[s + 4] = (unsigned char)(m[s] | (m[s + 4] >> 4) << 6);
        scales[s + 8] = (unsigned char)((sc[s + 4] & 15) | (m[s + 4] & 15) << 4);
    }
}

/* Q4_K and Q5_K: element 64g + l (l < 32) is the low nibble of byte
 * 32g + l, element 64g + 32 + l its high nibble; Q5_K's fifth bits are bit
 * 2g (resp. 2g + 1) of high byte l. */
static void test_q4_k_and_q5_k(void **state)
{
    (void)state;
    const int sc[8] = {1, 7, 16, 33, 47, 50, 62, 63}, m[8] = {0, 63, 2, 17, 40, 5, 31, 48};
    unsigned char b4[144], b5[176];
    float e4[256], e5[256];
    put_u16(b4, F16_HALF);
    put_u16(b4 + 2, F16_QUARTER);
    pack_k_scales(sc, m, b4 + 4);
    memcpy(b5, b4, 16);
    memset(b5 + 16, 0, 32);
    for (int i = 0; i < 256; i++) {
        const int g = i / 64, l = i % 32, upper = (i % 64) >= 32, s = i / 32;
        const int q = (7 * i + 3) % 16, fifth = (i / 3) % 2;
        unsigned char *n4 = &b4[16 + 32 * g + l], *n5 = &b5[48 + 32 * g + l];
        *n4 = (unsigned char)(upper ? (*n4 & 0x0F) | q << 4 : q);
        *n5 = *n4;
        b5[16 + l] |= (unsigned char)(fifth << (2 * g + upper));
        e4[i] = 0.5f * (float)sc[s] * (float)q - 0.25f * (float)m[s];
        e5[i] = 0.5f * (float)sc[s] * (float)(q + 16 * fifth) - 0.25f * (float)m[s];
    }
    expect_block(LMS_DTYPE_Q4_K, b4, e4);
    expect_block(LMS_DTYPE_Q5_K, b5, e5);
}

/* Q6_K: in half h (128 elements), element 128h + 32k + l takes, for k = 0..3,
 * the low nibble of ql[64h + l], the low of ql[64h + 32 + l], the high of
 * ql[64h + l], the high of ql[64h + 32 + l], and bits 2k, 2k + 1 of
 * qh[32h + l]; sub-block (16 elements) s has int8 scale s - 8. */
static void test_q6_k(void **state)
{
    (void)state;
    unsigned char b[210];
    float e[256];
    memset(b, 0, sizeof b);
    for (int s = 0; s < 16; s++)
        b[192 + s] = (unsigned char)(int8_t)(s - 8);
    put_u16(b + 208, F16_EIGHTH);
    for (int i = 0; i < 256; i++) {
        const int h = i / 128, k = (i % 128) / 32, l = i % 32;
        const int q = (11 * i + 5) % 64;
        unsigned char *ql = &b[64 * h + (k % 2) * 32 + l];
        *ql |= (unsigned char)((q & 15) << (k >= 2 ? 4 : 0));
        b[128 + 32 * h + l] |= (unsigned char)((q >> 4) << (2 * k));
        e[i] = 0.125f * (float)(i / 16 - 8) * (float)(q - 32);
    }
    expect_block(LMS_DTYPE_Q6_K, b, e);
}

/* Several blocks in one call land one after another. */
static void test_runs_of_blocks(void **state)
{
    (void)state;
    unsigned char b[3 * 34];
    for (int k = 0; k < 3; k++) {
        put_u16(b + 34 * k, (uint16_t)(F16_ONE + (k << 10))); /* 1, 2, 4 */
        for (int j = 0; j < 32; j++)
            b[34 * k + 2 + j] = (unsigned char)(j - k);
    }
    float out[96];
    lms_ggml_blocks_to_f32(LMS_DTYPE_Q8_0, b, 3, out);
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 32; j++)
            assert_true(out[32 * k + j] == (float)((int8_t)(j - k) * (1 << k)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_geometry),       cmocka_unit_test(test_q4_0_and_q4_1),
        cmocka_unit_test(test_q5_0_and_q5_1),  cmocka_unit_test(test_q8_0),
        cmocka_unit_test(test_q4_k_and_q5_k),  cmocka_unit_test(test_q6_k),
        cmocka_unit_test(test_runs_of_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
