/*
 * report.h — the benchmark's results as CSV files (for the plot and for
 * anyone's spreadsheet) and as Markdown tables (for docs/benchmarks.md),
 * with the ratios and target checks computed from measurements of one run.
 */
#ifndef BENCH_REPORT_H
#define BENCH_REPORT_H

#include <stdbool.h>
#include <stdio.h>

#include "run.h"
#include "sgemm_peak.h"

typedef struct {
    int32_t tokens;
    int n_reps;
    double seconds[4]; /* each repetition */
    double best_seconds;
    double useful_flops;
    run_result best; /* the fastest repetition */
} forward_result;

/* sgemm at the projection shapes, measured at one point of the run. */
typedef struct {
    char when[24]; /* "start", "before (a)", "end" */
    int n_shapes;
    sgemm_shape_result shapes[4];
} sgemm_round;

/* One algorithm's measurement on one workload. */
typedef struct {
    char label[32]; /* "serial", "prefill_extend (warm)", ... */
    lms_algorithm algorithm;
    bool warm; /* the query's KV was in the prefix cache */
    run_result run;
    double useful_flops; /* of the timed request */
} algo_row;

typedef struct {
    const workload *w;
    int index;           /* the workload's place in the set (the plot's x) */
    bool check_contract; /* the ≥75× serial and ≥60% of peak targets apply */
    algo_row rows[8];
    int n_rows;
} workload_result;

typedef struct {
    FILE *sgemm_csv, *forward_csv, *multi_csv, *md;
    double peak_gflops;     /* the best sgemm shape and round of this run */
    double peak_cpu_gflops; /* the same per second of process CPU time */
    int targets_missed;
} report;

/* The order of calls: open, header, sgemm (which fixes the peak: call it
 * after every round was measured), forward, workload..., footer, close. */

int report_open(report *r, const char *dir);
/* Closes the files; returns -1 when any write failed. */
int report_close(report *r);

void report_header(report *r, const char *model_path, const lms_model_info *model,
                   double load_seconds);
void report_sgemm(report *r, const sgemm_round *rounds, int n_rounds);
void report_forward(report *r, const forward_result *f);
void report_workload(report *r, const workload_result *wr);
/* The load average at the end, and how to read the CPU share column. */
void report_footer(report *r);

#endif
