/*
 * latency.c — latency samples kept whole and sorted once for percentiles
 * (a run of minutes at thousands of calls per second is a few MB).
 */
#include "latency.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

bool latency_add(latency_record *rec, double seconds)
{
    rec->sorted = false;
    return array_push((void **)&rec->values, &rec->count, &rec->cap, sizeof seconds, &seconds);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double latency_percentile(latency_record *rec, double p)
{
    if (rec->count == 0) return 0;
    if (!rec->sorted) {
        qsort(rec->values, rec->count, sizeof *rec->values, compare_doubles);
        rec->sorted = true;
    }
    /* Nearest rank: the smallest value with at least p% of samples at or below it. */
    size_t rank = (size_t)ceil(p / 100.0 * (double)rec->count);
    if (rank == 0) rank = 1;
    if (rank > rec->count) rank = rec->count;
    return rec->values[rank - 1];
}

double latency_mean(const latency_record *rec)
{
    double sum = 0;
    for (size_t i = 0; i < rec->count; i++)
        sum += rec->values[i];
    return rec->count ? sum / (double)rec->count : 0;
}

void latency_free(latency_record *rec)
{
    free(rec->values);
    memset(rec, 0, sizeof *rec);
}
