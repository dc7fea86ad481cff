/*
 * clock.h — the benchmarks' clocks: monotonic wall time, and the CPU time of
 * the whole process (all its threads), which does not count time other
 * processes took the cores.
 */
#ifndef BENCH_CLOCK_H
#define BENCH_CLOCK_H

#include <time.h>

static inline double clock_read(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double clock_seconds(void)
{
    return clock_read(CLOCK_MONOTONIC);
}

static inline double cpu_seconds(void)
{
    return clock_read(CLOCK_PROCESS_CPUTIME_ID);
}

#endif
