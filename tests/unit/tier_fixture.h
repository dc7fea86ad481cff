/*
 * tier_fixture.h — the compute tiers (engine/compute/tier.h) a kernel test
 * runs on: the one LMSCORE_TEST_ISA names — CTest registers such a test once
 * per tier of the table — or, when it is unset, every tier offered here
 * (compute_tier_offered: the CPU runs it, the OS grants it, it proves
 * itself). A named tier not offered skips the whole program with exit code
 * FIXTURE_SKIPPED, which CTest reports as skipped (SKIP_RETURN_CODE).
 */
#ifndef LMS_TEST_TIER_FIXTURE_H
#define LMS_TEST_TIER_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu.h"
#include "tier.h"

#ifndef FIXTURE_SKIPPED
#define FIXTURE_SKIPPED 77
#endif
#define FIXTURE_MAX_TIERS 16

/* The tiers to test, in out[] (room for FIXTURE_MAX_TIERS); their count.
 * Exits with FIXTURE_SKIPPED when the named tier cannot run here, and
 * with 2 when LMSCORE_TEST_ISA names no tier. */
static inline int fixture_tiers(const compute_tier **out)
{
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    const char *isa = getenv("LMSCORE_TEST_ISA");
    int n = 0;
    for (const compute_tier *const *t = compute_tiers; *t && n < FIXTURE_MAX_TIERS; t++) {
        if (isa && strcmp(isa, (*t)->name) != 0) continue;
        char why[200];
        if (compute_tier_offered(*t, &cpu, why, sizeof why)) {
            out[n++] = *t;
        } else if (isa) {
            printf("skipped: %s\n", why);
            exit(FIXTURE_SKIPPED);
        }
    }
    if (isa && n == 0) {
        fprintf(stderr, "LMSCORE_TEST_ISA=%s: no such tier (%s)\n", isa, lms_isa_names());
        exit(2);
    }
    return n;
}

#endif
