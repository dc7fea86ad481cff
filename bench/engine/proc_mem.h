/*
 * proc_mem.h — the process's peak resident set, resettable between runs so
 * that each benchmark run reports its own peak.
 */
#ifndef BENCH_PROC_MEM_H
#define BENCH_PROC_MEM_H

#include <stdbool.h>
#include <stdint.h>

/* Resets the kernel's high-water mark (VmHWM) to the current RSS. False when
 * the kernel refuses; the peak then covers the whole process lifetime. */
bool proc_reset_peak_rss(void);
/* VmHWM in bytes, or -1 when /proc/self/status cannot be read. */
int64_t proc_peak_rss_bytes(void);

#endif
