/*
 * latency.h — the latencies of a benchmark run and their percentiles.
 */
#ifndef LMSCORE_CLI_LATENCY_H
#define LMSCORE_CLI_LATENCY_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    double *values; /* seconds */
    size_t count, cap;
    bool sorted;
} latency_record;

/* False when out of memory. */
bool latency_add(latency_record *rec, double seconds);
/* The p-th percentile (0..100, nearest rank) in seconds; 0 when empty. */
double latency_percentile(latency_record *rec, double p);
double latency_mean(const latency_record *rec);
void latency_free(latency_record *rec);

#endif
