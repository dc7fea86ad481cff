/*
 * tier.c — the table of compute tiers and the choice of one (see tier.h).
 */
#include "tier.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Each kernel file's kernels (kernels_<isa>.c). */
extern const vec_kernels vec_kernels_avx512, vec_kernels_avx2, vec_kernels_generic;
extern const f32_kernels f32_kernels_avx512, f32_kernels_avx2, f32_kernels_generic;
extern const w16_kernels w16_kernels_avx512, w16_kernels_avx2;
extern const q8_kernels q8_kernels_avx512_vnni, q8_kernels_avx2;
extern const q8_kernels q8x2_kernels_avx512_vnni, q8x2_kernels_avx2;

#define ALL_FORMATS                                                                                \
    (1u << LMS_WEIGHTS_F32 | 1u << LMS_WEIGHTS_F16 | 1u << LMS_WEIGHTS_BF16 | 1u << LMS_WEIGHTS_Q8)

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

static const compute_tier AVX512_VNNI = {
    .name = "avx512-vnni",
    .needs = "AVX-512 F, BW, VL and VNNI",
    .runs_on = has_avx512_vnni,
    .formats = ALL_FORMATS,
    .vec = &vec_kernels_avx512,
    .f32 = &f32_kernels_avx512,
    .w16 = &w16_kernels_avx512,
    .q8 = &q8_kernels_avx512_vnni,
    .q8x2 = &q8x2_kernels_avx512_vnni,
    .block = matmul_panels,
};

/* AVX-512 without VNNI (Skylake-SP): int8 through the AVX2 kernel. */
static const compute_tier AVX512 = {
    .name = "avx512",
    .needs = "AVX-512 F, BW and VL",
    .runs_on = has_avx512,
    .formats = ALL_FORMATS,
    .vec = &vec_kernels_avx512,
    .f32 = &f32_kernels_avx512,
    .w16 = &w16_kernels_avx512,
    .q8 = &q8_kernels_avx2,
    .q8x2 = &q8x2_kernels_avx2,
    .block = matmul_panels,
};

static const compute_tier AVX2 = {
    .name = "avx2",
    .needs = "AVX2, FMA and F16C",
    .runs_on = has_avx2,
    .formats = ALL_FORMATS,
    .vec = &vec_kernels_avx2,
    .f32 = &f32_kernels_avx2,
    .w16 = &w16_kernels_avx2,
    .q8 = &q8_kernels_avx2,
    .q8x2 = &q8x2_kernels_avx2,
    .block = matmul_panels,
};

/* Any x86-64: f32 only. */
static const compute_tier GENERIC = {
    .name = "generic",
    .needs = "x86-64",
    .runs_on = has_x86_64,
    .formats = 1u << LMS_WEIGHTS_F32,
    .vec = &vec_kernels_generic,
    .f32 = &f32_kernels_generic,
    .block = matmul_panels,
};

const compute_tier *const compute_tiers[] = {&AVX512_VNNI, &AVX512, &AVX2, &GENERIC, NULL};

static char isa_names[128];

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

lms_status compute_tier_select(const char *name, const lms_cpu_features *cpu,
                               const compute_tier **out, lms_error *err)
{
    const bool automatic = !name || !strcmp(name, "auto");
    char runs[96] = "";
    for (const compute_tier *const *t = compute_tiers; *t; t++) {
        if ((*t)->runs_on(cpu)) {
            if (automatic || !strcmp(name, (*t)->name)) {
                *out = *t;
                return LMS_OK;
            }
            snprintf(runs + strlen(runs), sizeof runs - strlen(runs), "%s%s", runs[0] ? ", " : "",
                     (*t)->name);
        } else if (!automatic && !strcmp(name, (*t)->name)) {
            return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "isa",
                            "isa %s needs %s, which this CPU lacks", name, (*t)->needs);
        }
    }
    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, "isa",
                    "isa %s is not one of %s (this CPU runs %s)", name, lms_isa_names(), runs);
}
