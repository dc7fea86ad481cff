/*
 * workers.c — the engine worker pool (see workers.h).
 */
#include "workers.h"

#include <omp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "test_hooks.h"

typedef struct {
    worker_pool *pool;
    pthread_t thread;
    atomic_bool busy;
    _Atomic int64_t progress_ms; /* CLOCK_MONOTONIC of the last progress mark */
} worker;

struct worker_pool {
    pthread_mutex_t mu;
    pthread_cond_t has_work;
    pthread_cond_t all_exited; /* CLOCK_MONOTONIC */
    int running;               /* worker threads not yet returned */
    worker_job *head, *tail;
    int queued, queue_depth;
    bool stopping;
    int n_workers;
    int threads_per_worker;
    int64_t stall_ms; /* test hook: each job first sleeps this long, without progress */
    worker *workers;
};

static _Thread_local worker *tl_worker;

void worker_note_progress(void)
{
    if (tl_worker) atomic_store(&tl_worker->progress_ms, monotonic_ms());
}

static void *worker_main(void *arg)
{
    worker *w = arg;
    worker_pool *p = w->pool;
    tl_worker = w;
    /* The thread's own OpenMP team size: libgomp gives every thread that
     * opens a parallel region its own team, so N workers with the default
     * (all CPUs each) would run N teams on the same CPUs. */
    omp_set_num_threads(p->threads_per_worker);
    for (;;) {
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stopping)
            pthread_cond_wait(&p->has_work, &p->mu);
        worker_job *job = p->head;
        if (!job) {
            if (--p->running == 0) pthread_cond_broadcast(&p->all_exited);
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        p->head = job->next;
        if (!p->head) p->tail = NULL;
        p->queued--;
        pthread_mutex_unlock(&p->mu);

        int64_t started = monotonic_ns();
        job->waited_ns = started - job->submitted_ns;
        metrics_observe(job->metrics_method, METRICS_QUEUE_TIME, job->waited_ns);
        atomic_store(&w->progress_ms, started / 1000000);
        atomic_store(&w->busy, true);
        if (p->stall_ms > 0) {
            struct timespec ts = {p->stall_ms / 1000, (p->stall_ms % 1000) * 1000000};
            nanosleep(&ts, NULL);
        }
        job->run(job);
        atomic_store(&w->busy, false);
    }
}

lms_status worker_pool_start(int n_workers, int threads_per_worker, int queue_depth,
                             worker_pool **out, lms_error *err)
{
    worker_pool *p = calloc(1, sizeof *p);
    worker *ws = calloc((size_t)n_workers, sizeof *ws);
    if (!p || !ws) {
        free(p);
        free(ws);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->has_work, NULL);
    pthread_condattr_t attr;
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&p->all_exited, &attr);
    pthread_condattr_destroy(&attr);
    p->queue_depth = queue_depth;
    p->threads_per_worker = threads_per_worker;
    p->workers = ws;
    p->stall_ms = test_hook_ms("LMSCORE_TEST_STALL_WORKER_MS");
    if (p->stall_ms > 0) {
        log_record r;
        log_begin(&r, LOG_WARNING, "test hook: every job stalls its worker");
        log_int(&r, "stall_ms", p->stall_ms);
        log_end(&r);
    }
    for (int i = 0; i < n_workers; i++) {
        ws[i].pool = p;
        pthread_mutex_lock(&p->mu);
        p->running++;
        pthread_mutex_unlock(&p->mu);
        if (pthread_create(&ws[i].thread, NULL, worker_main, &ws[i]) != 0) {
            pthread_mutex_lock(&p->mu);
            p->running--;
            pthread_mutex_unlock(&p->mu);
            p->n_workers = i;
            worker_pool_stop(p, -1);
            return lms_fail(err, LMS_ERR_NOMEM, NULL, "workers", "cannot start worker thread %d",
                            i);
        }
        p->n_workers = i + 1;
    }
    *out = p;
    return LMS_OK;
}

static bool enqueue(worker_pool *p, worker_job *job, bool within_depth)
{
    pthread_mutex_lock(&p->mu);
    bool ok = !p->stopping && (!within_depth || p->queued < p->queue_depth);
    if (ok) {
        job->submitted_ns = monotonic_ns();
        job->next = NULL;
        if (p->tail)
            p->tail->next = job;
        else
            p->head = job;
        p->tail = job;
        p->queued++;
        pthread_cond_signal(&p->has_work);
    }
    pthread_mutex_unlock(&p->mu);
    return ok;
}

bool worker_pool_submit(worker_pool *p, worker_job *job)
{
    return enqueue(p, job, true);
}

bool worker_pool_resubmit(worker_pool *p, worker_job *job)
{
    return enqueue(p, job, false);
}

int worker_pool_queued(worker_pool *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->queued;
    pthread_mutex_unlock(&p->mu);
    return n;
}

bool worker_pool_stop(worker_pool *p, int64_t timeout_ms)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    if (timeout_ms > 0) {
        until.tv_sec += timeout_ms / 1000;
        until.tv_nsec += (timeout_ms % 1000) * 1000000;
        if (until.tv_nsec >= 1000000000) until.tv_sec++, until.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&p->mu);
    p->stopping = true;
    pthread_cond_broadcast(&p->has_work);
    int timed_out = 0;
    while (p->running > 0 && !timed_out)
        timed_out = timeout_ms < 0 ? pthread_cond_wait(&p->all_exited, &p->mu)
                                   : pthread_cond_timedwait(&p->all_exited, &p->mu, &until);
    bool stopped = p->running == 0;
    pthread_mutex_unlock(&p->mu);
    if (!stopped) return false;
    for (int i = 0; i < p->n_workers; i++)
        pthread_join(p->workers[i].thread, NULL);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->has_work);
    pthread_cond_destroy(&p->all_exited);
    free(p->workers);
    free(p);
    return true;
}

int64_t worker_pool_stalled_ms(worker_pool *p)
{
    int64_t now = monotonic_ms(), worst = 0;
    for (int i = 0; i < p->n_workers; i++) {
        worker *w = &p->workers[i];
        if (!atomic_load(&w->busy)) continue;
        int64_t age = now - atomic_load(&w->progress_ms);
        if (age > worst) worst = age;
    }
    return worst;
}
