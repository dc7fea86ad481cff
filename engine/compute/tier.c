/*
 * tier.c — the table of compute tiers and the choice of one (see tier.h).
 */
#include "tier.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernels_amx.h"

/* Each kernel file's kernels (kernels_<isa>.c). */
extern const vec_kernels vec_kernels_avx512, vec_kernels_avx2, vec_kernels_generic;
extern const f32_kernels f32_kernels_avx512, f32_kernels_avx2, f32_kernels_generic;
extern const w16_kernels w16_kernels_avx512, w16_kernels_avx2;
extern const q8_kernels q8_kernels_avx512_vnni, q8_kernels_avx2;
extern const q8_kernels q8x2_kernels_avx512_vnni, q8x2_kernels_avx2;

#define ALL_FORMATS                                                                                \
    (1u << LMS_WEIGHTS_F32 | 1u << LMS_WEIGHTS_F16 | 1u << LMS_WEIGHTS_BF16 | 1u << LMS_WEIGHTS_Q8)

/* Linux (5.16+) hands a process AMX's tile data state only once it asks
 * (arch_prctl ARCH_REQ_XCOMP_PERM for XFEATURE_XTILEDATA); a tile
 * instruction before that faults. The grant is for the whole process and
 * asking again is harmless. */
#define ARCH_REQ_XCOMP_PERM 0x1023
#define XFEATURE_XTILEDATA  18

static bool amx_enable(char *why, size_t why_size)
{
    if (syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA) == 0) return true;
    snprintf(why, why_size, "amx: Linux refused the tile state (arch_prctl: %s)", strerror(errno));
    return false;
}

static bool has_amx(const lms_cpu_features *cpu)
{
    return cpu->amx;
}

static bool has_avx512_bf16(const lms_cpu_features *cpu)
{
    return cpu->avx512_bf16;
}

static bool has_avx512_vnni(const lms_cpu_features *cpu)
{
    return cpu->avx512_vnni;
}

static bool has_avx512(const lms_cpu_features *cpu)
{
    return cpu->avx512;
}

static bool has_avx2(const lms_cpu_features *cpu)
{
    return cpu->avx2;
}

static bool has_x86_64(const lms_cpu_features *cpu)
{
    (void)cpu;
    return true;
}

const kernel_family kernel_family_avx512_vnni = {
    .isa = "avx512-vnni",
    .runs_on = has_avx512_vnni,
    .vec = &vec_kernels_avx512,
    .f32 = &f32_kernels_avx512,
    .w16 = &w16_kernels_avx512,
    .q8 = &q8_kernels_avx512_vnni,
    .q8x2 = &q8x2_kernels_avx512_vnni,
};

/* AVX-512 without VNNI (Skylake-SP): int8 through the AVX2 kernels. */
const kernel_family kernel_family_avx512 = {
    .isa = "avx512",
    .runs_on = has_avx512,
    .vec = &vec_kernels_avx512,
    .f32 = &f32_kernels_avx512,
    .w16 = &w16_kernels_avx512,
    .q8 = &q8_kernels_avx2,
    .q8x2 = &q8x2_kernels_avx2,
};

const kernel_family kernel_family_avx2 = {
    .isa = "avx2",
    .runs_on = has_avx2,
    .vec = &vec_kernels_avx2,
    .f32 = &f32_kernels_avx2,
    .w16 = &w16_kernels_avx2,
    .q8 = &q8_kernels_avx2,
    .q8x2 = &q8x2_kernels_avx2,
};

/* Any x86-64: f32 only. */
const kernel_family kernel_family_generic = {
    .isa = "generic",
    .runs_on = has_x86_64,
    .vec = &vec_kernels_generic,
    .f32 = &f32_kernels_generic,
};

/* The amx tier's kernels on the tile layer's emulation, beside the AVX2
 * family: its tests on any CPU with AVX2, never picked by auto. */
static const compute_tier AMX_EMULATED = {
    .name = "amx-emulated",
    .needs = "AVX2, FMA and F16C",
    .runs_on = has_avx2,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx2,
    .block = matmul_amx_emulated,
    .bf16_activations = KERNEL_BF16_TDPBF16PS,
    .bf16_at = amx_bf16_at,
    .q8_signed = true,
    .emulated = true,
};

/* AMX (Sapphire Rapids on): BF16 projections on bf16 tiles, x as two bf16
 * values, and Q8 ones on int8 tiles, every GGUF block type and float
 * weights at int8 (kernels_amx.h: tdpbssd for full-range codes, tdpbsud
 * for the small-bias ones). Still on the AVX-512 VNNI family: F16
 * matrices (kept exact: tdpbf16ps would round them to bf16), f32 ones and
 * attention. Offered once Linux grants the tile state and its kernel
 * matched the same kernel on the tile emulation at start-up. */
static const compute_tier AMX = {
    .name = "amx",
    .needs = "AMX-TILE, AMX-BF16, AMX-INT8 and AVX-512 VNNI",
    .runs_on = has_amx,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx512_vnni,
    .block = matmul_amx,
    .reference_block = matmul_amx_emulated,
    .bf16_activations = KERNEL_BF16_TDPBF16PS,
    .bf16_at = amx_bf16_at,
    .q8_signed = true,
    .enable = amx_enable,
};

/* AVX-512 BF16 (AMD Zen 4 on, Intel Cooper Lake and Sapphire Rapids on):
 * BF16 projections by vdpbf16ps, x as two bf16 values, in the amx tiers'
 * k pairs (kernels_avx512_bf16.c); F16 (kept exact), f32 and Q8 matrices
 * and attention on the AVX-512 VNNI family. Offered once its kernel
 * matched the same projection with VDPBF16PS in plain C at start-up. */
static const compute_tier AVX512_BF16 = {
    .name = "avx512-bf16",
    .needs = "AVX-512 F, BW, VL, VNNI and BF16",
    .runs_on = has_avx512_bf16,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx512_vnni,
    .block = matmul_avx512_bf16,
    .reference_block = matmul_avx512_bf16_reference,
    .bf16_activations = KERNEL_BF16_VDPBF16PS,
    .bf16_at = amx_bf16_at,
};

static const compute_tier AVX512_VNNI = {
    .name = "avx512-vnni",
    .needs = "AVX-512 F, BW, VL and VNNI",
    .runs_on = has_avx512_vnni,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx512_vnni,
    .block = matmul_panels,
};

static const compute_tier AVX512 = {
    .name = "avx512",
    .needs = "AVX-512 F, BW and VL",
    .runs_on = has_avx512,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx512,
    .block = matmul_panels,
};

static const compute_tier AVX2 = {
    .name = "avx2",
    .needs = "AVX2, FMA and F16C",
    .runs_on = has_avx2,
    .formats = ALL_FORMATS,
    .kernels = &kernel_family_avx2,
    .block = matmul_panels,
};

static const compute_tier GENERIC = {
    .name = "generic",
    .needs = "x86-64",
    .runs_on = has_x86_64,
    .formats = 1u << LMS_WEIGHTS_F32,
    .kernels = &kernel_family_generic,
    .block = matmul_panels,
};

const compute_tier *const compute_tiers[] = {&AMX,  &AVX512_BF16, &AVX512_VNNI,  &AVX512,
                                             &AVX2, &GENERIC,     &AMX_EMULATED, NULL};

static char isa_names[160];

static void list_isa_names(void)
{
    snprintf(isa_names, sizeof isa_names, "auto");
    for (const compute_tier *const *t = compute_tiers; *t; t++)
        snprintf(isa_names + strlen(isa_names), sizeof isa_names - strlen(isa_names), "|%s",
                 (*t)->name);
}

const char *lms_isa_names(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, list_isa_names);
    return isa_names;
}

bool lms_isa_known(const char *name)
{
    if (!strcmp(name, "auto")) return true;
    for (const compute_tier *const *t = compute_tiers; *t; t++)
        if (!strcmp(name, (*t)->name)) return true;
    return false;
}

bool compute_tier_offered(const compute_tier *t, const lms_cpu_features *cpu, char *why,
                          size_t why_size)
{
    if (!t->runs_on(cpu)) {
        snprintf(why, why_size, "%s needs %s, which this CPU lacks", t->name, t->needs);
        return false;
    }
    if (t->enable && !t->enable(why, why_size)) return false;
    return compute_tier_proves(t, why, why_size);
}

lms_status compute_tier_select_from(const compute_tier *const *tiers, const char *name,
                                    const lms_cpu_features *cpu, const compute_tier **out,
                                    char *dropped, size_t dropped_size, lms_error *err)
{
    const bool automatic = !name || !strcmp(name, "auto");
    char runs[96] = "", why[200];
    if (dropped_size) dropped[0] = '\0';
    for (const compute_tier *const *t = tiers; *t; t++) {
        if (automatic && (*t)->emulated) continue;
        const bool named = !automatic && !strcmp(name, (*t)->name);
        if (!automatic && !named) {
            if ((*t)->runs_on(cpu))
                snprintf(runs + strlen(runs), sizeof runs - strlen(runs), "%s%s",
                         runs[0] ? ", " : "", (*t)->name);
            continue;
        }
        if (!(*t)->runs_on(cpu)) {
            if (named)
                return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "isa",
                                "isa %s needs %s, which this CPU lacks", name, (*t)->needs);
            continue;
        }
        if (compute_tier_offered(*t, cpu, why, sizeof why)) {
            *out = *t;
            return LMS_OK;
        }
        if (named)
            return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "isa", "isa %s is not offered: %s",
                            name, why);
        if (dropped_size && !dropped[0]) snprintf(dropped, dropped_size, "%s", why);
    }
    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "isa",
                    "isa %s is not one of %s (this CPU runs %s)", name, lms_isa_names(), runs);
}

lms_status compute_tier_select(const char *name, const lms_cpu_features *cpu,
                               const compute_tier **out, char *dropped, size_t dropped_size,
                               lms_error *err)
{
    return compute_tier_select_from(compute_tiers, name, cpu, out, dropped, dropped_size, err);
}
