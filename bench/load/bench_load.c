/*
 * bench_load — how fast lms_engine_open loads a model file from the page
 * cache: what an autoscaled replica waits before it serves.
 *
 *   bench_load MODEL [--reps N] [--precision P] [--isa TIER]
 *
 * Reads MODEL once (so that its pages are cached, as after a first start),
 * then opens and closes the engine N times (default 3) on all OpenMP
 * threads and prints one Markdown row for the best open by wall time: the
 * file's geometry and stored size, the weights as held, the wall seconds
 * and the rate (file MB per wall second), the process's CPU seconds (user
 * and system: on a shared machine these do not grow with the other
 * processes' load), and where the wall time went, split by the engine's
 * progress reports (lms_stop.on_progress): before the first packed piece
 * (mapping, parsing, allocating), packing, and after the last (the
 * tokenizer). The exit status is 1 when an open fails or when the progress
 * reports did not count up to their total: the start-up progress a daemon
 * logs is part of what this measures.
 */
#include <fcntl.h>
#include <omp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "lmscore.h"

/* What the progress reports said during one open. */
typedef struct {
    atomic_size_t calls;
    atomic_size_t most_done; /* the largest done heard */
    atomic_size_t total;
    _Atomic int64_t first_ns, last_ns; /* monotonic_ns of the first and last report */
} progress;

static void on_progress(void *ctx, const char *what, size_t done, size_t total)
{
    (void)what;
    progress *p = ctx;
    const int64_t now = monotonic_ns();
    int64_t none = 0;
    atomic_compare_exchange_strong(&p->first_ns, &none, now);
    atomic_store(&p->last_ns, now);
    atomic_fetch_add(&p->calls, 1);
    atomic_store(&p->total, total);
    size_t seen = atomic_load(&p->most_done);
    while (done > seen && !atomic_compare_exchange_weak(&p->most_done, &seen, done)) {
    }
}

static double rusage_seconds(struct timeval tv)
{
    return (double)tv.tv_sec + 1e-6 * (double)tv.tv_usec;
}

/* Reads path to the end (into the page cache); its size in *bytes. */
static int warm(const char *path, double *bytes)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        perror(path);
        if (fd >= 0) close(fd);
        return -1;
    }
    static char buf[1 << 20];
    ssize_t got;
    while ((got = read(fd, buf, sizeof buf)) > 0) {
    }
    close(fd);
    *bytes = (double)st.st_size;
    return got < 0 ? -1 : 0;
}

typedef struct {
    double wall, user, sys, before, packing, after;
    progress seen;
} open_result;

static int open_once(const char *model, const lms_engine_options *base, open_result *r,
                     lms_model_info *info)
{
    memset(r, 0, sizeof *r);
    lms_engine_options opt = *base;
    opt.open_stop = (lms_stop){.ctx = &r->seen, .on_progress = on_progress};
    struct rusage u0, u1;
    getrusage(RUSAGE_SELF, &u0);
    const int64_t t0 = monotonic_ns();
    lms_engine *e = NULL;
    lms_error err = {0};
    if (lms_engine_open(model, &opt, &e, &err) != LMS_OK) {
        fprintf(stderr, "bench_load: %s: %s\n", model, err.msg);
        return -1;
    }
    const int64_t t1 = monotonic_ns();
    getrusage(RUSAGE_SELF, &u1);
    lms_engine_model_info(e, info);
    lms_engine_close(e);
    r->wall = 1e-9 * (double)(t1 - t0);
    r->user = rusage_seconds(u1.ru_utime) - rusage_seconds(u0.ru_utime);
    r->sys = rusage_seconds(u1.ru_stime) - rusage_seconds(u0.ru_stime);
    const int64_t first = atomic_load(&r->seen.first_ns), last = atomic_load(&r->seen.last_ns);
    if (first) {
        r->before = 1e-9 * (double)(first - t0);
        r->packing = 1e-9 * (double)(last - first);
        r->after = 1e-9 * (double)(t1 - last);
    }
    return 0;
}

int main(int argc, char **argv)
{
    const char *model = NULL;
    int reps = 3;
    bool usage = false;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--precision") && i + 1 < argc &&
                 lms_precision_parse(argv[i + 1], &opt.precision))
            i++;
        else if (!strcmp(argv[i], "--isa") && i + 1 < argc && lms_isa_known(argv[i + 1]))
            opt.isa = argv[++i];
        else if (argv[i][0] != '-' && !model)
            model = argv[i];
        else
            usage = true;
    }
    if (usage || !model || reps < 1) {
        fprintf(stderr,
                "usage: bench_load MODEL [--reps N] [--precision auto|f32|bf16|bf16x2|int8|int8x2] "
                "[--isa %s]\n",
                lms_isa_names());
        return 2;
    }
    double bytes;
    if (warm(model, &bytes) != 0) return 1;
    open_result best = {.wall = 1e30}, r;
    lms_model_info info;
    for (int i = 0; i < reps; i++) {
        if (open_once(model, &opt, &r, &info) != 0) return 1;
        if (atomic_load(&r.seen.calls) == 0 ||
            atomic_load(&r.seen.most_done) != atomic_load(&r.seen.total)) {
            fprintf(stderr, "bench_load: the progress reports reached %zu of %zu (%zu calls)\n",
                    atomic_load(&r.seen.most_done), atomic_load(&r.seen.total),
                    atomic_load(&r.seen.calls));
            return 1;
        }
        fprintf(stderr, "bench_load: open %d: %.2f s, CPU %.1f + %.1f s\n", i + 1, r.wall, r.user,
                r.sys);
        if (r.wall < best.wall) best = r;
    }
    printf("threads %d; best of %d opens by wall time, the file in the page cache\n\n",
           omp_get_max_threads(), reps);
    printf("| file | geometry | file MB | weights as held | tier | load s | MB/s | CPU s (user + "
           "sys) | before packing s | packing s | after s | progress reports |\n");
    printf("|---|---|---:|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
    const char *base = strrchr(model, '/');
    printf("| %s | %s, %d layers, d_model %d, d_ff %d, %d/%d heads, vocab %d | %.0f | %s (%s), "
           "%.0f MB | %s | %.2f | %.0f | %.1f + %.1f | %.2f | %.2f | %.2f | %zu |\n",
           base ? base + 1 : model, info.architecture, info.n_layers, info.d_model, info.d_ff,
           info.n_heads, info.n_kv_heads, info.vocab_size, bytes / 1e6, info.precision,
           info.weights, (double)info.weight_bytes / 1e6, info.isa, best.wall,
           bytes / 1e6 / best.wall, best.user, best.sys, best.before, best.packing, best.after,
           atomic_load(&best.seen.calls));
    return 0;
}
