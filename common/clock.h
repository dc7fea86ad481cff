/*
 * clock.h — the project's clocks, for the daemon, the tools, the CLI and the
 * benchmarks: monotonic wall time (CLOCK_MONOTONIC: an arbitrary origin,
 * never set back, so differences are durations), and the CPU time of the
 * whole process (all its threads), which does not count time other
 * processes took the cores.
 */
#ifndef LMSCORE_CLOCK_H
#define LMSCORE_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline struct timespec clock_now(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return ts;
}

static inline int64_t monotonic_ns(void)
{
    const struct timespec ts = clock_now(CLOCK_MONOTONIC);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static inline int64_t monotonic_ms(void)
{
    return monotonic_ns() / 1000000;
}

static inline double monotonic_seconds(void)
{
    const struct timespec ts = clock_now(CLOCK_MONOTONIC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static inline double process_cpu_seconds(void)
{
    const struct timespec ts = clock_now(CLOCK_PROCESS_CPUTIME_ID);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif
