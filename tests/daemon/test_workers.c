/*
 * test_workers.c — workers.c: jobs run in submission order, a full queue
 * refuses instead of growing (a resubmitted job is not held to it), a stop
 * runs what is queued and is bounded by its timeout when a job is stuck,
 * and the stall measure the watchdog reads.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "workers.h"

/* A job that records its turn and, when gated, waits until released. */
typedef struct {
    worker_job work;
    int *order, *n_done, id;
    bool gated;
} test_job;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static bool released;
static int running;

static void run_test_job(worker_job *work)
{
    test_job *j = (test_job *)work;
    pthread_mutex_lock(&mu);
    running++;
    pthread_cond_broadcast(&changed);
    while (j->gated && !released)
        pthread_cond_wait(&changed, &mu);
    j->order[(*j->n_done)++] = j->id;
    running--;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mu);
}

static void wait_running(int n)
{
    pthread_mutex_lock(&mu);
    while (running < n)
        pthread_cond_wait(&changed, &mu);
    pthread_mutex_unlock(&mu);
}

static void release(bool open)
{
    pthread_mutex_lock(&mu);
    released = open;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&mu);
}

static test_job make(int id, int *order, int *n_done, bool gated)
{
    return (test_job){
        .work = {.run = run_test_job}, .order = order, .n_done = n_done, .id = id, .gated = gated};
}

static void test_fifo_depth_and_stop(void **state)
{
    (void)state;
    worker_pool *p = NULL;
    lms_error err = {0};
    assert_int_equal(worker_pool_start(1, 1, 2, &p, &err), LMS_OK);
    int order[8], n_done = 0;
    release(false);
    test_job jobs[5] = {make(0, order, &n_done, true), make(1, order, &n_done, false),
                        make(2, order, &n_done, false), make(3, order, &n_done, false),
                        make(4, order, &n_done, false)};
    assert_true(worker_pool_submit(p, &jobs[0].work));
    wait_running(1); /* the worker holds job 0: the queue is empty */
    assert_true(worker_pool_submit(p, &jobs[1].work));
    assert_true(worker_pool_submit(p, &jobs[2].work));
    assert_int_equal(worker_pool_queued(p), 2);
    assert_false(worker_pool_submit(p, &jobs[3].work));  /* the depth: refused */
    assert_true(worker_pool_resubmit(p, &jobs[4].work)); /* admitted once: not held to it */
    assert_int_equal(worker_pool_queued(p), 3);
    release(true);
    assert_true(worker_pool_stop(p, -1)); /* runs what is queued, then joins */
    assert_int_equal(n_done, 4);
    int want[] = {0, 1, 2, 4};
    assert_memory_equal(order, want, sizeof want);
}

static void test_stop_is_bounded_by_a_stuck_job(void **state)
{
    (void)state;
    worker_pool *p = NULL;
    lms_error err = {0};
    assert_int_equal(worker_pool_start(2, 1, 4, &p, &err), LMS_OK);
    int order[4], n_done = 0;
    release(false);
    test_job stuck = make(0, order, &n_done, true);
    assert_true(worker_pool_submit(p, &stuck.work));
    wait_running(1);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_false(worker_pool_stop(p, 100)); /* left as it is */
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double waited = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    assert_true(waited >= 0.09 && waited < 5);
    test_job late = make(1, order, &n_done, false);
    assert_false(worker_pool_submit(p, &late.work)); /* stopping: nothing new */
    assert_false(worker_pool_resubmit(p, &late.work));
    release(true);
    assert_true(worker_pool_stop(p, -1));
    assert_int_equal(n_done, 1);
}

static void test_stalled_ms(void **state)
{
    (void)state;
    worker_pool *p = NULL;
    lms_error err = {0};
    assert_int_equal(worker_pool_start(1, 1, 4, &p, &err), LMS_OK);
    assert_int_equal(worker_pool_stalled_ms(p), 0); /* idle */
    release(false);
    int order[1], n_done = 0;
    test_job busy = make(0, order, &n_done, true); /* busy, without progress */
    assert_true(worker_pool_submit(p, &busy.work));
    wait_running(1);
    struct timespec pause = {0, 150 * 1000000};
    nanosleep(&pause, NULL);
    assert_true(worker_pool_stalled_ms(p) >= 100);
    release(true);
    assert_true(worker_pool_stop(p, -1));
    worker_note_progress(); /* outside a worker: a no-op */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_depth_and_stop),
        cmocka_unit_test(test_stop_is_bounded_by_a_stuck_job),
        cmocka_unit_test(test_stalled_ms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
