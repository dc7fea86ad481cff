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

/* One instruction set's kernels (kernels.h, vec.h): what a tier runs for
 * every product its block function does not compute itself, and for
 * attention and the elementwise steps. A tier names its family instead of
 * listing kernels, so that no row can mix two sets by accident. */
typedef struct {
    const char *isa; /* the family's instruction set, for messages */
    bool (*runs_on)(const lms_cpu_features *cpu);
    const vec_kernels *vec; /* the elementwise kernels; every family has them */
    const f32_kernels *f32; /* every family has them */
    const w16_kernels *w16; /* F16 and BF16 weights, or NULL */
    const q8_kernels *q8;   /* Q8 weights, one code per activation value; or NULL */
    const q8_kernels *q8x2; /* Q8 weights, two codes per activation value; or NULL */
} kernel_family;

typedef struct compute_tier {
    const char *name;  /* what --isa calls it */
    const char *needs; /* the instructions it needs, for messages */
    bool (*runs_on)(const lms_cpu_features *cpu);
    unsigned formats; /* the weight formats it multiplies: bit 1 << lms_weights_format */
    const kernel_family *kernels; /* its micro-kernels */
    matmul_block_fn *block;       /* a tile of a projection */
    /* block with the instructions that the project cannot check by
     * running them (AMX's tiles, vdpbf16ps) replaced by their plain-C
     * definitions from the SDM, everything else the same code: what the
     * start-up self-check (compute_tier_proves) holds block to, and what
     * the tier's tests run on a CPU without those instructions. NULL: the
     * tier's block is plain C over its family (matmul_panels), nothing to
     * prove. */
    matmul_block_fn *reference_block;
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
} compute_tier;

/* The tiers, the fastest first; NULL-terminated. */
extern const compute_tier *const compute_tiers[];

/* The kernel families, one per instruction set (tier.c). */
extern const kernel_family kernel_family_avx512_vnni, kernel_family_avx512, kernel_family_avx2,
    kernel_family_generic;

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

/* t's self-check (tier_proof.c), for a tier with a reference_block: t's
 * block on fixed problems (BF16 and every Q8 layout, x in one and two
 * codes) gives its reference_block's bits, both run with t's own layout,
 * input and kernels. It runs in a child process, so that nothing it does
 * — a fault, a signal, a hang — can touch the caller: false, why set, on
 * a difference, a fault or signal (its name), no answer within
 * compute_tier_proof_seconds, or no child. true when t has no
 * reference_block. */
bool compute_tier_proves(const compute_tier *t, char *why, size_t why_size);

/* Test hooks. compute_tier_force_mismatch: while set, the self-check
 * moves one element of the tested tier's result by one ulp (a CPU that
 * computes differently). compute_tier_proof_signal: while nonzero, the
 * self-check raises that signal in its child before it multiplies (a
 * kernel that faults); -1 makes it never finish. compute_tier_proof_seconds:
 * how long a self-check may take (default 20). */
extern bool compute_tier_force_mismatch;
extern int compute_tier_proof_signal;
extern int compute_tier_proof_seconds;

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
