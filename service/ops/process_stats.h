/*
 * process_stats.h — the standard process metrics that every Prometheus
 * client library exports (process_cpu_seconds_total, ..._start_time_seconds,
 * ..._open_fds, ..._max_fds, ..._virtual_memory_bytes,
 * ..._resident_memory_bytes), read from the kernel at scrape time, and the
 * memory limit of the process's cgroups beside them.
 */
#ifndef LMSCORED_PROCESS_STATS_H
#define LMSCORED_PROCESS_STATS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    double cpu_seconds;        /* user + system time of every thread */
    double start_time_seconds; /* since the Unix epoch, to the clock tick */
    int64_t open_fds;
    int64_t max_fds; /* the soft RLIMIT_NOFILE */
    int64_t virtual_memory_bytes;
    int64_t resident_memory_bytes;
    int64_t memory_limit_bytes; /* cgroup.h's; -1 without one */
} process_stats;

/* Fills out; false when the kernel's figures cannot be read (no /proc). */
bool process_stats_read(process_stats *out);

#endif
