/*
 * bench_peak — one core's peak rate for each instruction the projection
 * kernels rest on (peak.h), on this CPU.
 *
 *   bench_peak [--seconds S]
 *
 * Prints the CPU's name and a Markdown table: every probe, its rate per
 * core (the best of 3 runs of about S seconds, default 0.5, on one
 * thread's CPU clock), or "not on this CPU"; and which instruction the
 * tier the engine picks here uses for each weight format (the instruction
 * bench_matmul measures its projections against).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_name.h"
#include "peak.h"

int main(int argc, char **argv)
{
    double seconds = 0.5;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seconds") && i + 1 < argc && atof(argv[i + 1]) > 0) {
            seconds = atof(argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_peak [--seconds S]\n");
            return 2;
        }
    }
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    const compute_tier *tier;
    lms_error err = {0};
    if (compute_tier_select("auto", &cpu, &tier, NULL, 0, &err) != LMS_OK) {
        fprintf(stderr, "bench_peak: %s\n", err.msg);
        return 1;
    }
    char name[128];
    bench_cpu_name(name, sizeof name);
    printf("CPU %s; one thread, 12 independent accumulators in registers, best of 3 runs of "
           "%.2g s by the thread's CPU time\n\n",
           name, seconds);
    printf("| instruction | peak per core | kernels on it here (tier %s) |\n|---|---:|---|\n",
           tier->name);
    const struct {
        const char *what;
        lms_weights_format format;
    } uses[] = {{"f32", LMS_WEIGHTS_F32}, {"16-bit", LMS_WEIGHTS_BF16}, {"int8", LMS_WEIGHTS_Q8}};
    for (int k = 0; k < PEAK_N; k++) {
        char kernels[64] = "";
        for (size_t u = 0; u < sizeof uses / sizeof *uses; u++)
            if (compute_tier_multiplies(tier, uses[u].format) &&
                peak_of_tier(tier, uses[u].format) == (peak_kind)k)
                snprintf(kernels + strlen(kernels), sizeof kernels - strlen(kernels), "%s%s",
                         kernels[0] ? ", " : "", uses[u].what);
        if (!peak_available((peak_kind)k))
            printf("| `%s` | not on this CPU | |\n", peak_instruction((peak_kind)k));
        else
            printf("| `%s` | %.1f %s | %s |\n", peak_instruction((peak_kind)k),
                   peak_rate((peak_kind)k, seconds), peak_unit((peak_kind)k),
                   kernels[0] ? kernels : "–");
        fflush(stdout);
    }
    return 0;
}
