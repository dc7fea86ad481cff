/*
 * cpu.c — CPUID and XGETBV (see cpu.h).
 */
#include "cpu.h"

#include <cpuid.h>
#include <stdint.h>

static uint64_t xgetbv0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

void lms_cpu_detect(lms_cpu_features *out)
{
    *out = (lms_cpu_features){0};
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return;
    const bool fma = c & bit_FMA, f16c = c & bit_F16C, osxsave = c & bit_OSXSAVE;
    if (!osxsave || !__get_cpuid_count(7, 0, &a, &b, &c, &d)) return;
    const uint64_t xcr0 = xgetbv0();
    const bool ymm_state = (xcr0 & 0x6) == 0x6;   /* SSE and AVX registers */
    const bool zmm_state = (xcr0 & 0xe6) == 0xe6; /* + opmask, ZMM0-15 high, ZMM16-31 */
    out->avx2 = ymm_state && fma && f16c && (b & bit_AVX2);
    out->avx512 =
        out->avx2 && zmm_state && (b & bit_AVX512F) && (b & bit_AVX512BW) && (b & bit_AVX512VL);
    out->avx512_vnni = out->avx512 && (c & bit_AVX512VNNI);
    /* CPUID.7.1:EAX bit 5 (leaf 7's subleaf 1 exists where 7.0:EAX >= 1) */
    unsigned a1 = 0, b1, c1, d1;
    if (a >= 1) __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1);
    out->avx512_bf16 = out->avx512_vnni && (a1 & (1u << 5));
    /* CPUID.7.0:EDX bits 22, 24, 25 (gcc's and clang's cpuid.h name them
     * differently) */
    const unsigned amx_bf16 = 1u << 22, amx_tile = 1u << 24, amx_int8 = 1u << 25;
    const bool tile_state = (xcr0 & 0x60000) == 0x60000; /* XTILECFG, XTILEDATA */
    out->amx = out->avx512_vnni && tile_state && (d & amx_bf16) && (d & amx_tile) && (d & amx_int8);
}
