/*
 * tier.h — the compute tiers: one row per instruction set that kernels are
 * written for, and the one place where an engine picks its tier.
 *
 * A tier names the CPU features it needs, the kernels it brings
 * (kernels.h, and vec.h's elementwise ones compiled for it), the weight
 * formats those kernels multiply (weights.h), and the function that
 * computes a tile of a projection. Adding a tier is a
 * kernel file and a row of the table in tier.c. Every tier computes every
 * element with a sequence of operations kernels.h defines, fixed by the
 * element's row alone: the vector tiers all the same one (f32
 * activations), so among them the choice of tier changes the speed, never
 * a number; a tier with bf16 activations (bf16_activations: the amx tiers,
 * avx512-bf16) its own, within the precision gates of the f32 result
 * (docs/engine.md).
 */
#ifndef LMS_TIER_H
#define LMS_TIER_H

#include <stdbool.h>
#include <stddef.h>

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
    /* The sequence of BF16 projections (kernels.h): nonzero, x rounded to
     * bf16 and the tier's own instruction's steps (tiers with the same one
     * give the same bits); the other projections, and attention, keep
     * kernels.h's f32 sequence. */
    kernel_bf16_sequence bf16_activations;
    lms_panel_at_fn *bf16_at; /* the BF16 panels' order (weights.h), NULL for k-major */
    /* Q8 matrices of full-range codes (bias 128: Q8_0, and float weights
     * quantised at load) held as signed bytes (weights.h signed_codes),
     * multiplied by the tier's block function alone (the amx tiers' int8
     * tiles) */
    bool q8_signed;
    bool emulated; /* a test of a tier's kernel on any CPU: auto never picks it */
    /* Asks the OS for what the tier needs beyond runs_on (AMX: Linux's
     * grant of the tile state); false, why set, when refused. NULL: none. */
    bool (*enable)(char *why, size_t why_size);
    /* A start-up self-check (compute_tier_proves), of a tier with its own
     * sequence or instructions the project cannot run: the tier whose bits
     * it must give on a fixed problem; NULL for none. */
    const struct compute_tier *proven_against;
} compute_tier;

/* The tiers, the fastest first; NULL-terminated. */
extern const compute_tier *const compute_tiers[];

/* What avx512-bf16 proves itself against (kernels_avx512_bf16_reference.c;
 * not in compute_tiers: no tests are generated for it, auto never sees it). */
extern const compute_tier compute_tier_avx512_bf16_reference;

/* name NULL or "auto": the first tier offered here (emulations left out);
 * a tier the CPU runs but that is not offered (its enable or its
 * self-check failed) is passed over, and why is written to dropped (""
 * when none was). Otherwise the tier of that name, if offered; an unknown
 * name, a tier the CPU cannot run or one not offered fails with
 * LMS_ERR_UNSUPPORTED (field "isa"), saying why. A tier is offered when
 * the CPU runs it, its enable grants it and it proves itself. */
lms_status compute_tier_select(const char *name, const lms_cpu_features *cpu,
                               const compute_tier **out, char *dropped, size_t dropped_size,
                               lms_error *err);

/* compute_tier_select over another table (NULL-terminated): the tests'. */
lms_status compute_tier_select_from(const compute_tier *const *tiers, const char *name,
                                    const lms_cpu_features *cpu, const compute_tier **out,
                                    char *dropped, size_t dropped_size, lms_error *err);

/* Is t offered here? false, why set, when not. */
bool compute_tier_offered(const compute_tier *t, const lms_cpu_features *cpu, char *why,
                          size_t why_size);

/* t's self-check (tier_proof.c): its block function on a fixed problem
 * gives t->proven_against's bits; true when t has none. false, why set, on
 * a difference or a fault. */
bool compute_tier_proves(const compute_tier *t, char *why, size_t why_size);

/* Test hook: while set, the self-check moves one element of the tested
 * tier's result by one ulp (a CPU that computes differently). */
extern bool compute_tier_force_mismatch;

static inline bool compute_tier_multiplies(const compute_tier *t, lms_weights_format format)
{
    return t->formats & (1u << format);
}

/* What t owns of w's layout, set after lms_weights_alloc and before
 * packing: the BF16 panels' order, Q8's full-range codes as signed bytes. */
static inline void compute_tier_own_layout(const compute_tier *t, lms_weights *w)
{
    if (w->format == LMS_WEIGHTS_BF16) w->bf16_at = t->bf16_at;
    if (w->format == LMS_WEIGHTS_Q8 && t->q8_signed && w->layout.bias == 128) {
        w->layout.bias = 0;
        w->layout.signed_codes = true;
    }
}

#endif
