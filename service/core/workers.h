/*
 * workers.h — the engine worker pool: N threads taking jobs from one
 * bounded FIFO, each computing with its share of the daemon's threads. A full queue refuses the job
 * (the caller answers RESOURCE_EXHAUSTED) instead of growing. Each worker records when it last made
 * progress, so the systemd watchdog can tell a busy worker from a stuck one.
 */
#ifndef LMSCORED_WORKERS_H
#define LMSCORED_WORKERS_H

#include <stdbool.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct worker_job {
    /* Runs on a worker thread and takes the job over (frees it). */
    void (*run)(struct worker_job *job);
    int64_t waited_ns;  /* set for run: from worker_pool_submit to the start */
    int metrics_method; /* set by the submitter: whose queue time the wait is */
    /* the pool's own */
    struct worker_job *next;
    int64_t submitted_ns;
} worker_job;

typedef struct worker_pool worker_pool;

/* Each worker computes with threads_per_worker OpenMP threads (the
 * engine's loops and its kernels' tiles alike). */
lms_status worker_pool_start(int n_workers, int threads_per_worker, int queue_depth,
                             worker_pool **out, lms_error *err);
/* Queues job; false when queue_depth jobs already wait or the pool stops. */
bool worker_pool_submit(worker_pool *p, worker_job *job);
/* Queues a job again, after the others (its next piece of work): the queue
 * depth does not apply (the job was admitted once); false once the pool
 * stops. */
bool worker_pool_resubmit(worker_pool *p, worker_job *job);
/* Jobs waiting for a worker now. */
int worker_pool_queued(worker_pool *p);
/* Runs what is queued, then joins the workers and frees the pool; false
 * (the pool left as it is, for a process about to exit) when a worker is
 * still busy after timeout_ms (negative: no limit). */
bool worker_pool_stop(worker_pool *p, int64_t timeout_ms);

/* The longest time, in ms, that a busy worker has gone without progress
 * (0 when every worker is idle or progressing). */
int64_t worker_pool_stalled_ms(worker_pool *p);

/* Called by a job (e.g. from the engine's should_stop poll) to say it is
 * making progress; a no-op outside worker threads. */
void worker_note_progress(void);

#endif
