/*
 * cpu.h — which x86 instruction sets the kernels may use on this machine.
 *
 * The 16-bit and int8 kernels come in tiers: AVX2 (+FMA, F16C), the floor
 * every low-precision path needs; AVX-512 (F, BW, VL, and VNNI for int8,
 * and BF16 for vdpbf16ps); AMX's tiles beside AVX-512 VNNI. A tier counts only when the CPU has it
 * and the OS saves the registers it needs (XGETBV). The vector tiers
 * compute every element with the same sequence of operations, so a cap on
 * the tier changes the speed, never a number (tier.h says what AMX's
 * changes).
 */
#ifndef LMS_CPU_H
#define LMS_CPU_H

#include <stdbool.h>

typedef struct {
    bool avx2;        /* AVX2 + FMA + F16C, OS-enabled */
    bool avx512;      /* AVX-512 F, BW, VL, OS-enabled */
    bool avx512_vnni; /* AVX-512 VNNI on top of avx512 */
    bool avx512_bf16; /* AVX-512 BF16 on top of avx512_vnni */
    bool amx;         /* AMX-TILE, AMX-BF16 and AMX-INT8, their state (XCR0 bits 17, 18)
                       * OS-enabled; Linux still asks a process to request it (tier.c) */
} lms_cpu_features;

void lms_cpu_detect(lms_cpu_features *out);

#endif
