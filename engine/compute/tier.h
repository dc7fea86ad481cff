/*
 * tier.h — the compute tiers: one row per instruction set that kernels are
 * written for, and the one place where an engine picks its tier.
 *
 * A tier names the CPU features it needs, the kernels it brings
 * (kernels.h, and vec.h's elementwise ones compiled for it), the weight
 * formats those kernels multiply (weights.h), and the function that
 * computes a tile of a projection. Adding a tier is a
 * kernel file and a row of the table in tier.c. Every tier computes every
 * element with kernels.h's sequence of operations, so the choice of tier
 * changes the speed, never a number.
 */
#ifndef LMS_TIER_H
#define LMS_TIER_H

#include <stdbool.h>

#include "cpu.h"
#include "kernels.h"
#include "lmscore.h"
#include "vec.h"

typedef struct compute_tier {
    const char *name;  /* what --isa calls it */
    const char *needs; /* the instructions it needs, for messages */
    bool (*runs_on)(const lms_cpu_features *cpu);
    unsigned formats;       /* the weight formats it multiplies: bit 1 << lms_weights_format */
    const vec_kernels *vec; /* the elementwise kernels; every tier has them */
    const f32_kernels *f32; /* every tier has them */
    const w16_kernels *w16; /* F16 and BF16 weights, or NULL */
    const q8_kernels *q8;   /* Q8 weights, one code per activation value; or NULL */
    const q8_kernels *q8x2; /* Q8 weights, two codes per activation value; or NULL */
    matmul_block_fn *block; /* a tile of a projection */
} compute_tier;

/* The tiers, the fastest first; NULL-terminated. */
extern const compute_tier *const compute_tiers[];

/* name NULL or "auto": the first tier the CPU runs. Otherwise the tier of
 * that name, if the CPU runs it; an unknown name or a tier the CPU cannot
 * run fails with LMS_ERR_UNSUPPORTED (field "isa"), saying what it lacks. */
lms_status compute_tier_select(const char *name, const lms_cpu_features *cpu,
                               const compute_tier **out, lms_error *err);

static inline bool compute_tier_multiplies(const compute_tier *t, lms_weights_format format)
{
    return t->formats & (1u << format);
}

#endif
