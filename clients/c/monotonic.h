/*
 * monotonic.h — wall time for rates, timeouts and latencies.
 */
#ifndef LMSCORE_CLI_MONOTONIC_H
#define LMSCORE_CLI_MONOTONIC_H

/* Seconds on a monotonic clock (an arbitrary origin). */
double monotonic_seconds(void);

#endif
