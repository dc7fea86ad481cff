/*
 * cpu_name.h — the CPU's model name as /proc/cpuinfo gives it, for the
 * benchmark programs that name the machine in their output.
 */
#ifndef LMS_BENCH_CPU_NAME_H
#define LMS_BENCH_CPU_NAME_H

#include <stdio.h>
#include <string.h>

/* out gets the first "model name", or "unknown". */
static inline void bench_cpu_name(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        const char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) == 0 && colon) {
            snprintf(out, size, "%s", colon + 2);
            out[strcspn(out, "\n")] = 0;
            break;
        }
    }
    fclose(f);
}

#endif
