/*
 * cpu.h — which x86 instruction sets the kernels may use on this machine.
 *
 * The 16-bit and int8 kernels come in two tiers: AVX2 (+FMA, F16C), the
 * floor every low-precision path needs, and AVX-512 (F, BW, VL, and VNNI
 * for int8). A tier counts only when the CPU has it and the OS saves the
 * registers it needs (XGETBV). Both tiers compute every element with the
 * same sequence of operations, so a cap on the tier changes the speed,
 * never a number.
 */
#ifndef LMS_CPU_H
#define LMS_CPU_H

#include <stdbool.h>

typedef struct {
    bool avx2;        /* AVX2 + FMA + F16C, OS-enabled */
    bool avx512;      /* AVX-512 F, BW, VL, OS-enabled */
    bool avx512_vnni; /* AVX-512 VNNI on top of avx512 */
} lms_cpu_features;

void lms_cpu_detect(lms_cpu_features *out);

#endif
