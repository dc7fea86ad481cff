/*
 * report.c — CSV and Markdown output of the engine benchmark (see report.h).
 */
#include "report.h"

#include <cblas.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cpu_name.h"

#define MIB (1024.0 * 1024.0)

static FILE *open_in(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) fprintf(stderr, "bench_engine: cannot write %s\n", path);
    return f;
}

int report_open(report *r, const char *dir)
{
    memset(r, 0, sizeof *r);
    r->sgemm_csv = open_in(dir, "sgemm.csv");
    r->forward_csv = open_in(dir, "forward.csv");
    r->multi_csv = open_in(dir, "multi_item.csv");
    r->md = open_in(dir, "engine.md");
    if (!r->sgemm_csv || !r->forward_csv || !r->multi_csv || !r->md) {
        report_close(r);
        return -1;
    }
    fprintf(r->sgemm_csv, "when,m,n,k,best_seconds,gflops,gflop_per_cpu_s\n");
    fprintf(r->forward_csv,
            "tokens,reps,best_seconds,useful_gflop,useful_gflops,"
            "sgemm_peak_gflops,pct_of_sgemm_peak,pct_of_peak_per_cpu_s,engine_peak_mib,"
            "peak_rss_mib,cpu_share\n");
    fprintf(r->multi_csv,
            "workload,workload_index,workload_label,q,n,l,algorithm,status,ran_as,items_timed,"
            "wall_s,full_request_s,items_per_s,speedup_vs_serial,useful_gflop,useful_gflops,"
            "pct_of_sgemm_peak,pct_of_peak_per_cpu_s,computed_tokens,cached_tokens,engine_peak_mib,"
            "peak_rss_mib,cpu_share,"
            "note\n");
    return 0;
}

int report_close(report *r)
{
    int rc = 0;
    FILE *files[] = {r->sgemm_csv, r->forward_csv, r->multi_csv, r->md};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++)
        if (files[i] && (ferror(files[i]) | fclose(files[i]))) rc = -1;
    memset(r, 0, sizeof *r);
    return rc;
}

static void load_average(char *out, size_t size)
{
    snprintf(out, size, "unknown");
    FILE *f = fopen("/proc/loadavg", "r");
    if (!f) return;
    double a1, a5, a15;
    if (fscanf(f, "%lf %lf %lf", &a1, &a5, &a15) == 3)
        snprintf(out, size, "%.2f / %.2f / %.2f", a1, a5, a15);
    fclose(f);
}

/* Useful FLOPs per CPU-second over sgemm's, in percent: the ratio with the
 * cores other processes took factored out. */
static double pct_of_cpu_peak(const report *r, double useful_flops, const run_result *x)
{
    if (x->cpu_seconds <= 0 || r->peak_cpu_gflops <= 0) return 0.0;
    return 100.0 * useful_flops / x->cpu_seconds * 1e-9 / r->peak_cpu_gflops;
}

/* The environment variables that change what OpenBLAS and OpenMP do. */
static void tuning_environment(char *out, size_t size)
{
    static const char *const NAMES[] = {"OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS",
                                        "OMP_NUM_THREADS", "OMP_WAIT_POLICY"};
    size_t used = 0;
    out[0] = 0;
    for (size_t i = 0; i < sizeof NAMES / sizeof *NAMES; i++) {
        const char *v = getenv(NAMES[i]);
        if (!v || used >= size) continue;
        int n = snprintf(out + used, size - used, "%s%s=%s", used ? ", " : "", NAMES[i], v);
        if (n > 0) used += (size_t)n;
    }
    if (!out[0]) snprintf(out, size, "none set");
}

void report_header(report *r, const char *model_path, const lms_model_info *c, double load_seconds)
{
    char cpu[256], load[64], env[256];
    bench_cpu_name(cpu, sizeof cpu);
    load_average(load, sizeof load);
    tuning_environment(env, sizeof env);
    fprintf(r->md,
            "Run on \"%s\", %ld online CPUs; %s, kernel %s, %d threads; tuning "
            "environment: %s. Load average (1/5/15 min) at the start: %s.\n\n"
            "Model: `%s` (%s, %d layers, d_model %d, %d heads / %d KV heads × %d, FFN %d, "
            "vocab %d), loaded in %.1f s.\n\n",
            cpu, sysconf(_SC_NPROCESSORS_ONLN), openblas_get_config(), openblas_get_corename(),
            openblas_get_num_threads(), env, load, model_path, c->architecture, c->n_layers,
            c->d_model, c->n_heads, c->n_kv_heads, c->head_dim, c->d_ff, c->vocab_size,
            load_seconds);
}

void report_footer(report *r)
{
    char load[64];
    load_average(load, sizeof load);
    fprintf(r->md,
            "Load average (1/5/15 min) at the end: %s. \"CPU share\" is the process's "
            "CPU time over wall time × CPUs: below ~0.9 other processes took cores "
            "during that run. \"per CPU-s\" ratios divide useful FLOPs per second of the "
            "process's CPU time by sgemm's FLOPs per CPU-second: cores taken by other "
            "processes cancel out of them.\n\n",
            load);
}

void report_sgemm(report *r, const sgemm_round *rounds, int n_rounds)
{
    fprintf(r->md, "### sgemm peak\n\n"
                   "`cblas_sgemm(RowMajor, NoTrans, Trans)` as the engine calls it, GFLOP/s, best "
                   "of the repetitions after a warm-up, measured at several points of the run "
                   "(other processes only ever lower it, so the peak is the best of all).\n\n"
                   "| M | N | K |");
    for (int k = 0; k < n_rounds; k++)
        fprintf(r->md, " %s |", rounds[k].when);
    fprintf(r->md, "\n|---:|---:|---:|");
    for (int k = 0; k < n_rounds; k++)
        fprintf(r->md, "---:|");
    fputc('\n', r->md);
    r->peak_gflops = r->peak_cpu_gflops = 0;
    for (int k = 0; k < n_rounds; k++)
        for (int i = 0; i < rounds[k].n_shapes; i++) {
            const sgemm_shape_result *x = &rounds[k].shapes[i];
            fprintf(r->sgemm_csv, "\"%s\",%d,%d,%d,%.6f,%.2f,%.2f\n", rounds[k].when, x->m, x->n,
                    x->k, x->best_seconds, x->best_gflops, x->best_cpu_gflops);
            if (x->best_gflops > r->peak_gflops) r->peak_gflops = x->best_gflops;
            if (x->best_cpu_gflops > r->peak_cpu_gflops) r->peak_cpu_gflops = x->best_cpu_gflops;
        }
    for (int i = 0; n_rounds > 0 && i < rounds[0].n_shapes; i++) {
        const sgemm_shape_result *x = &rounds[0].shapes[i];
        fprintf(r->md, "| %d | %d | %d |", x->m, x->n, x->k);
        for (int k = 0; k < n_rounds; k++)
            fprintf(r->md, " %.1f |", rounds[k].shapes[i].best_gflops);
        fputc('\n', r->md);
    }
    fprintf(r->md,
            "\n**sgemm peak: %.1f GFLOP/s**, %.1f GFLOP per CPU-second — the denominators of "
            "every ratio below.\n\n",
            r->peak_gflops, r->peak_cpu_gflops);
}

static const char *verdict(bool ok)
{
    return ok ? "met" : "**MISSED**";
}

void report_forward(report *r, const forward_result *f)
{
    const double gflops = f->useful_flops / f->best_seconds * 1e-9;
    const double pct = 100.0 * gflops / r->peak_gflops;
    const bool ok = pct >= 60.0;
    r->targets_missed += !ok;
    const double pct_cpu = pct_of_cpu_peak(r, f->useful_flops, &f->best);
    fprintf(r->forward_csv, "%d,%d,%.4f,%.2f,%.2f,%.2f,%.1f,%.1f,%.1f,%.1f,%.2f\n", f->tokens,
            f->n_reps, f->best_seconds, f->useful_flops * 1e-9, gflops, r->peak_gflops, pct,
            pct_cpu, (double)f->best.engine_peak_bytes / MIB, (double)f->best.peak_rss_bytes / MIB,
            run_cpu_share(&f->best));
    fprintf(r->md,
            "### Forward pass\n\nOne %d-token sequence, serial, scored at its "
            "last row; %.1f useful GFLOP; best of %d runs (",
            f->tokens, f->useful_flops * 1e-9, f->n_reps);
    for (int i = 0; i < f->n_reps; i++)
        fprintf(r->md, "%s%.2f s", i ? ", " : "", f->seconds[i]);
    fprintf(r->md,
            ").\n\n| tokens | best s | useful GFLOP/s | sgemm peak GFLOP/s | ratio | ratio per "
            "CPU-s | engine peak MiB | peak RSS MiB | CPU share |\n"
            "|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
            "| %d | %.2f | %.1f | %.1f | **%.1f%%** | %.1f%% | %.0f | %.0f | %.2f |\n\n"
            "Target ≥ 60%% of sgemm peak: %s.\n\n",
            f->tokens, f->best_seconds, gflops, r->peak_gflops, pct, pct_cpu,
            (double)f->best.engine_peak_bytes / MIB, (double)f->best.peak_rss_bytes / MIB,
            run_cpu_share(&f->best), verdict(ok));
}

/* ---- multi-item ---------------------------------------------------------- */

static double items_per_s(const algo_row *a)
{
    return a->run.status == RUN_OK ? a->run.items / a->run.seconds : 0.0;
}

static const algo_row *find(const workload_result *wr, lms_algorithm algo, bool warm)
{
    for (int i = 0; i < wr->n_rows; i++)
        if (wr->rows[i].algorithm == algo && wr->rows[i].warm == warm) return &wr->rows[i];
    return NULL;
}

/* CSV text field: quoted, with inner quotes doubled and newlines flattened. */
static void csv_text(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s == '\n' ? ' ' : *s, f);
    }
    fputc('"', f);
}

static void row_csv(report *r, int index, const workload *w, const algo_row *a, double serial_ips)
{
    const run_result *x = &a->run;
    fprintf(r->multi_csv, "%s,%d,\"(%s) Q=%d N=%d L=%d\",%d,%d,%d,%s,%s,%s,%d,", w->name, index,
            w->name, w->q, w->n, w->l, w->q, w->n, w->l, a->label, run_status_name(x->status),
            x->status == RUN_OK ? lms_algorithm_name(x->ran_as) : "", x->items);
    if (x->status == RUN_OK) {
        const double gflops = a->useful_flops / x->seconds * 1e-9;
        fprintf(r->multi_csv, "%.3f,%.3f,%.4f,%.2f,%.2f,%.2f,%.1f,%.1f,%lld,%lld,%.1f,%.1f,%.2f,",
                x->seconds, x->seconds * w->n / x->items, items_per_s(a),
                serial_ips > 0 ? items_per_s(a) / serial_ips : 0.0, a->useful_flops * 1e-9, gflops,
                100.0 * gflops / r->peak_gflops, pct_of_cpu_peak(r, a->useful_flops, x),
                (long long)x->computed_tokens, (long long)x->cached_tokens,
                (double)x->engine_peak_bytes / MIB, (double)x->peak_rss_bytes / MIB,
                run_cpu_share(x));
    } else {
        fprintf(r->multi_csv, "%.3f,,,,,,,,,,,,,", x->seconds);
    }
    csv_text(r->multi_csv, x->reason);
    fputc('\n', r->multi_csv);
}

static void row_md(report *r, const workload *w, const algo_row *a, double serial_ips)
{
    const run_result *x = &a->run;
    if (x->status != RUN_OK) {
        fprintf(r->md, "| %s | %s | | | | | | | | | | |\n", a->label, run_status_name(x->status));
        return;
    }
    const double gflops = a->useful_flops / x->seconds * 1e-9;
    char timed[48] = "", speedup[32] = "n/a";
    if (x->items < w->n) snprintf(timed, sizeof timed, " (%d of %d items)", x->items, w->n);
    if (serial_ips > 0) snprintf(speedup, sizeof speedup, "%.1f×", items_per_s(a) / serial_ips);
    fprintf(
        r->md,
        "| %s | %s | %.2f%s | %.2f | %.2f | %s | %.1f | %.1f%% | %.1f%% | %.0f | %.0f | %.2f |\n",
        a->label, lms_algorithm_name(x->ran_as), x->seconds, timed, x->seconds * w->n / x->items,
        items_per_s(a), speedup, gflops, 100.0 * gflops / r->peak_gflops,
        pct_of_cpu_peak(r, a->useful_flops, x), (double)x->engine_peak_bytes / MIB,
        (double)x->peak_rss_bytes / MIB, run_cpu_share(x));
}

/* The best cold explicit algorithm; NULL when none ran. */
static const algo_row *best_cold(const workload_result *wr)
{
    const algo_row *best = NULL;
    for (int i = 0; i < wr->n_rows; i++) {
        const algo_row *a = &wr->rows[i];
        if (a->warm || a->algorithm == LMS_ALGO_AUTO || a->run.status != RUN_OK) continue;
        if (!best || items_per_s(a) > items_per_s(best)) best = a;
    }
    return best;
}

/* Items per second of process CPU time: the comparison with the cores other
 * processes took factored out. */
static double items_per_cpu_s(const algo_row *a)
{
    return a->run.status == RUN_OK && a->run.cpu_seconds > 0 ? a->run.items / a->run.cpu_seconds
                                                             : 0.0;
}

static void checks_md(report *r, const workload_result *wr, const algo_row *serial)
{
    const algo_row *best = best_cold(wr), *autom = find(wr, LMS_ALGO_AUTO, false);
    if (!best || !autom || autom->run.status != RUN_OK) {
        fprintf(r->md, "- auto vs best: cannot compare (a run did not complete) — **MISSED**\n");
        r->targets_missed++;
        return;
    }
    const double rel = items_per_s(autom) / items_per_s(best);
    const bool auto_ok = rel >= 0.9;
    r->targets_missed += !auto_ok;
    fprintf(r->md,
            "- auto chose **%s** (%s); it ran at %.0f%% of the best algorithm (%s) by wall time "
            "(%.0f%% per CPU-second): within 10%%: %s.\n",
            lms_algorithm_name(autom->run.ran_as), autom->run.reason, 100.0 * rel, best->label,
            100.0 * items_per_cpu_s(autom) / items_per_cpu_s(best), verdict(auto_ok));
    if (!wr->check_contract) return;
    const bool have_serial = serial && serial->run.status == RUN_OK;
    const double speedup = have_serial ? items_per_s(best) / items_per_s(serial) : 0.0;
    const double speedup_cpu = have_serial ? items_per_cpu_s(best) / items_per_cpu_s(serial) : 0.0;
    const double pct = 100.0 * best->useful_flops / best->run.seconds * 1e-9 / r->peak_gflops;
    const double pct_cpu = pct_of_cpu_peak(r, best->useful_flops, &best->run);
    /* Useful FLOPs per item, serial over best: the speedup the best
     * algorithm would have if it ran at serial's GFLOP/s. */
    const double flop_ratio = have_serial ? (serial->useful_flops / serial->run.items) /
                                                (best->useful_flops / best->run.items)
                                          : 0.0;
    r->targets_missed += (speedup < 75.0) + (pct < 60.0);
    fprintf(r->md,
            "- Contract targets: best (%s) = %.1f× serial items/s (target ≥ 75×: %s; per "
            "CPU-second %.1f×), %.1f%% of sgemm peak end to end (target ≥ 60%%: %s; per "
            "CPU-second %.1f%%). Serial computes %.1f× the useful FLOPs per item: the speedup "
            "at equal GFLOP/s.\n",
            best->label, speedup, verdict(speedup >= 75.0), speedup_cpu, pct, verdict(pct >= 60.0),
            pct_cpu, flop_ratio);
}

void report_workload(report *r, const workload_result *wr)
{
    const int index = wr->index;
    const workload *w = wr->w;
    const algo_row *serial = find(wr, LMS_ALGO_SERIAL, false);
    const double serial_ips = serial ? items_per_s(serial) : 0.0;
    fprintf(r->md,
            "### (%s) Q=%d, N=%d, L=%d\n\n"
            "| algorithm | ran as | wall s | full request s | items/s | × serial | useful "
            "GFLOP/s | of sgemm peak | of peak per CPU-s | engine peak MiB | peak RSS MiB | CPU "
            "share |\n"
            "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            w->name, w->q, w->n, w->l);
    for (int i = 0; i < wr->n_rows; i++) {
        row_csv(r, index, w, &wr->rows[i], serial_ips);
        row_md(r, w, &wr->rows[i], serial_ips);
    }
    fputc('\n', r->md);
    if (w->rounds > 1)
        fprintf(r->md,
                "- each algorithm ran %d times, each time on a fresh query; the fastest "
                "run is shown.\n",
                w->rounds);
    if (serial && serial->run.status == RUN_OK && serial->run.items < w->n)
        fprintf(r->md,
                "- serial was timed on %d of the %d items and extrapolated per item "
                "(\"full request s\" = wall s × %d / %d).\n",
                serial->run.items, w->n, w->n, serial->run.items);
    for (int i = 0; i < wr->n_rows; i++) {
        const algo_row *a = &wr->rows[i];
        if (a->run.status != RUN_OK)
            fprintf(r->md, "- %s %s after %.2f s, %d of %d items done: %s\n", a->label,
                    run_status_name(a->run.status), a->run.seconds, a->run.items_done, a->run.items,
                    a->run.reason);
        else if (a->warm && a->run.cached_tokens > 0)
            fprintf(r->md,
                    "- %s: %lld query tokens served from the prefix cache; useful FLOPs "
                    "exclude the cached query.\n",
                    a->label, (long long)a->run.cached_tokens);
        else if (a->warm)
            fprintf(r->md, "- %s: ran as %s, which does not use the prefix cache (%s).\n", a->label,
                    lms_algorithm_name(a->run.ran_as), a->run.reason);
    }
    checks_md(r, wr, serial);
    fputc('\n', r->md);
}
