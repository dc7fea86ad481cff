/*
 * proc_mem.c — VmHWM from /proc/self/status; writing "5" to
 * /proc/self/clear_refs resets it (Linux 4.0+).
 */
#include "proc_mem.h"

#include <stdio.h>
#include <string.h>

bool proc_reset_peak_rss(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f) return false;
    bool ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

int64_t proc_peak_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return -1;
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "VmHWM: %lld kB", &kib) == 1) break;
    fclose(f);
    return kib < 0 ? -1 : (int64_t)kib * 1024;
}
