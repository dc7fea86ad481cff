/*
 * peak.c — the per-core peak probes (see peak.h). Each loop is inline
 * assembly, so that no compiler can hoist, fold or spill it: 12
 * accumulators (registers 0-11), the operands in registers 12 and up,
 * zeros throughout (no denormals, no data-dependent timing).
 */
#include "peak.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

#include "cpu.h"

/* Twelve copies of an instruction on accumulators 0-11, as a string:
 * OP(i) expands to one instruction on accumulator i. */
#define TWELVE(OP) OP(0) OP(1) OP(2) OP(3) OP(4) OP(5) OP(6) OP(7) OP(8) OP(9) OP(10) OP(11)
#define ACCUMULATORS                                                                               \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10",       \
        "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

#define ZERO_YMM(i) "vpxor %%ymm" #i ", %%ymm" #i ", %%ymm" #i "\n\t"
#define FMA_YMM(i)  "vfmadd231ps %%ymm12, %%ymm13, %%ymm" #i "\n\t"
#define INT8_YMM(i)                                                                                \
    "vpmaddubsw %%ymm13, %%ymm14, %%ymm12\n\t"                                                     \
    "vpmaddwd %%ymm15, %%ymm12, %%ymm12\n\t"                                                       \
    "vpaddd %%ymm12, %%ymm" #i ", %%ymm" #i "\n\t"
#define INT8_SIGNED_YMM(i)                                                                         \
    "vpsignb %%ymm13, %%ymm14, %%ymm12\n\t"                                                        \
    "vpmaddubsw %%ymm12, %%ymm15, %%ymm12\n\t"                                                     \
    "vpmaddwd %%ymm13, %%ymm12, %%ymm12\n\t"                                                       \
    "vpaddd %%ymm12, %%ymm" #i ", %%ymm" #i "\n\t"
#define ZERO_ZMM(i) "vpxord %%zmm" #i ", %%zmm" #i ", %%zmm" #i "\n\t"
#define FMA_ZMM(i)  "vfmadd231ps %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define VNNI_ZMM(i) "vpdpbusd %%zmm12, %%zmm13, %%zmm" #i "\n\t"
#define BF16_ZMM(i) "vdpbf16ps %%zmm12, %%zmm13, %%zmm" #i "\n\t"

/* Registers 0-15 zeroed, then the loop: 12 bodies per iteration. */
#define SIXTEEN(OP) TWELVE(OP) OP(12) OP(13) OP(14) OP(15)
#define LOOP(ZERO, BODY)                                                                           \
    __asm__ volatile(SIXTEEN(ZERO) "1:\n\t" TWELVE(BODY) "dec %0\n\tjnz 1b\n\tvzeroupper\n\t"      \
                     : "+r"(iterations)                                                            \
                     :                                                                             \
                     : ACCUMULATORS, "cc")

static void run_fma_ymm(uint64_t iterations)
{
    LOOP(ZERO_YMM, FMA_YMM);
}

static void run_int8_ymm(uint64_t iterations)
{
    LOOP(ZERO_YMM, INT8_YMM);
}

static void run_int8_signed_ymm(uint64_t iterations)
{
    LOOP(ZERO_YMM, INT8_SIGNED_YMM);
}

static void run_fma_zmm(uint64_t iterations)
{
    LOOP(ZERO_ZMM, FMA_ZMM);
}

static void run_vnni_zmm(uint64_t iterations)
{
    LOOP(ZERO_ZMM, VNNI_ZMM);
}

static void run_bf16_zmm(uint64_t iterations)
{
    LOOP(ZERO_ZMM, BF16_ZMM);
}

typedef struct {
    const char *instruction;
    const char *unit;
    double ops; /* per iteration of the loop: 12 instructions (sequences) */
    void (*run)(uint64_t iterations);
} probe;

static const probe PROBES[PEAK_N] = {
    [PEAK_FMA_YMM] = {"vfmadd231ps ymm", "GFLOP/s", 12 * 16, run_fma_ymm},
    [PEAK_INT8_YMM] = {"vpmaddubsw+vpmaddwd+vpaddd ymm", "GOP/s", 12 * 64, run_int8_ymm},
    [PEAK_INT8_SIGNED_YMM] = {"vpsignb+vpmaddubsw+vpmaddwd+vpaddd ymm", "GOP/s", 12 * 64,
                              run_int8_signed_ymm},
    [PEAK_FMA_ZMM] = {"vfmadd231ps zmm", "GFLOP/s", 12 * 32, run_fma_zmm},
    [PEAK_VNNI_ZMM] = {"vpdpbusd zmm", "GOP/s", 12 * 128, run_vnni_zmm},
    [PEAK_BF16_ZMM] = {"vdpbf16ps zmm", "GFLOP/s", 12 * 64, run_bf16_zmm},
};

const char *peak_instruction(peak_kind kind)
{
    return kind >= 0 && kind < PEAK_N ? PROBES[kind].instruction : "–";
}

const char *peak_unit(peak_kind kind)
{
    return kind >= 0 && kind < PEAK_N ? PROBES[kind].unit : "";
}

bool peak_available(peak_kind kind)
{
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    switch (kind) {
    case PEAK_FMA_YMM:
    case PEAK_INT8_YMM:
    case PEAK_INT8_SIGNED_YMM:
        return cpu.avx2;
    case PEAK_FMA_ZMM:
        return cpu.avx512;
    case PEAK_VNNI_ZMM:
        return cpu.avx512_vnni;
    case PEAK_BF16_ZMM:
        /* lms_cpu_detect checked that the OS saves the zmm state */
        return cpu.avx512 && __builtin_cpu_supports("avx512bf16");
    default:
        return false;
    }
}

static double thread_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double peak_rate(peak_kind kind, double seconds)
{
    const probe *p = &PROBES[kind];
    /* Grow the loop until one run takes a tenth of the time asked, then
     * time runs of the full length. */
    uint64_t iterations = 1 << 16;
    double t;
    for (;;) {
        const double t0 = thread_seconds();
        p->run(iterations);
        t = thread_seconds() - t0;
        if (t >= seconds / 10) break;
        iterations *= 4;
    }
    iterations = (uint64_t)((double)iterations * seconds / t) + 1;
    double best = 0;
    for (int r = 0; r < 3; r++) {
        const double t0 = thread_seconds();
        p->run(iterations);
        const double rate = (double)iterations * p->ops / (thread_seconds() - t0) * 1e-9;
        if (rate > best) best = rate;
    }
    return best;
}

peak_kind peak_of_tier(const compute_tier *tier, lms_weights_format format)
{
    const char *isa;
    switch (format) {
    case LMS_WEIGHTS_F32:
        isa = tier->kernels->f32->isa;
        break;
    case LMS_WEIGHTS_F16:
    case LMS_WEIGHTS_BF16:
        if (format == LMS_WEIGHTS_BF16 && tier->bf16_activations == KERNEL_BF16_VDPBF16PS)
            return PEAK_BF16_ZMM;
        if (!tier->kernels->w16 || (format == LMS_WEIGHTS_BF16 && tier->bf16_activations))
            return PEAK_NONE; /* tiles */
        isa = tier->kernels->w16->isa;
        break;
    case LMS_WEIGHTS_Q8:
        if (!tier->kernels->q8 || tier->q8_signed) return PEAK_NONE; /* tiles */
        isa = tier->kernels->q8->isa;
        break;
    default:
        return PEAK_NONE;
    }
    if (!strcmp(isa, "avx2")) return format == LMS_WEIGHTS_Q8 ? PEAK_INT8_YMM : PEAK_FMA_YMM;
    if (!strcmp(isa, "avx512")) return PEAK_FMA_ZMM;
    if (!strcmp(isa, "avx512-vnni")) return PEAK_VNNI_ZMM;
    if (!strcmp(isa, "avx512-bf16")) return PEAK_BF16_ZMM;
    return PEAK_NONE;
}
