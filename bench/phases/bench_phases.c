/*
 * bench_phases — where a forward pass spends its time, phase by phase
 * (forward.h's forward_profile), and how each phase scales with threads:
 * the serial fraction the thread-scaling targets are about.
 *
 *   bench_phases --model PATH [--precision P] [--isa TIER] [--threads "1 2"]
 *                [--query N] [--items N] [--item-len N] [--reps N]
 *
 * One packed pass of the peer workload's shape (default: a 200-token query,
 * then 20 items of 20 tokens as segments, each scored at its last row
 * against 4 labels; random token ids, seeded), run REPS times (default 3)
 * at each thread count (default 1 and 2); per phase the best of the reps.
 * Prints a Markdown table: per phase the seconds at each count, the share
 * of the pass at the first count, the speed-up from the first count to the
 * last, and what 16 threads would give by Amdahl's law with the parallel
 * fraction that speed-up implies.
 */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"

#define MAX_COUNTS 8

typedef struct {
    const char *model, *precision, *isa, *threads;
    int32_t query, items, item_len, reps;
} options;

static int usage(void)
{
    fprintf(stderr, "usage: bench_phases --model PATH [--precision P] [--isa TIER] "
                    "[--threads \"1 2\"] [--query N] [--items N] [--item-len N] [--reps N]\n");
    return 2;
}

static bool parse(int argc, char **argv, options *o)
{
    *o = (options){NULL, "auto", "auto", "1 2", 200, 20, 20, 3};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "--precision"))
            o->precision = v;
        else if (!strcmp(a, "--isa"))
            o->isa = v;
        else if (!strcmp(a, "--threads"))
            o->threads = v;
        else if (!strcmp(a, "--query"))
            o->query = atoi(v);
        else if (!strcmp(a, "--items"))
            o->items = atoi(v);
        else if (!strcmp(a, "--item-len"))
            o->item_len = atoi(v);
        else if (!strcmp(a, "--reps"))
            o->reps = atoi(v);
        else
            return false;
    }
    return argc % 2 == 1 && o->model && o->query > 0 && o->items > 0 && o->item_len > 0 &&
           o->reps > 0;
}

int main(int argc, char **argv)
{
    options o;
    if (!parse(argc, argv, &o)) return usage();
    int counts[MAX_COUNTS], n_counts = 0;
    for (char *s = (char *)o.threads, *end; n_counts < MAX_COUNTS; s = end) {
        const long n = strtol(s, &end, 10);
        if (end == s) break;
        if (n < 1) return usage();
        counts[n_counts++] = (int)n;
    }
    if (n_counts < 1) return usage();

    lms_engine_options eo;
    lms_engine_options_default(&eo);
    eo.isa = o.isa;
    if (!lms_precision_parse(o.precision, &eo.precision)) return usage();
    lms_engine *e;
    lms_error err = {0};
    if (lms_engine_open(o.model, &eo, &e, &err) != LMS_OK) {
        fprintf(stderr, "bench_phases: %s\n", err.msg);
        return 1;
    }
    const lms_model_config *c = &e->model->cfg;
    const int32_t rows = o.query + o.items * o.item_len, labels[4] = {0, 1, 2, 3};
    int32_t *tokens = malloc((size_t)rows * sizeof *tokens);
    int32_t *positions = malloc((size_t)rows * sizeof *positions);
    int32_t *begin = malloc((size_t)o.items * sizeof *begin);
    int32_t *end = malloc((size_t)o.items * sizeof *end);
    int32_t *scored = malloc((size_t)o.items * sizeof *scored);
    float *logprobs = malloc((size_t)o.items * 4 * sizeof *logprobs);
    if (!tokens || !positions || !begin || !end || !scored || !logprobs) return 1;
    uint64_t seed = 42;
    for (int32_t r = 0; r < rows; r++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        tokens[r] = (int32_t)((seed >> 33) % (uint64_t)c->vocab_size);
        positions[r] = r < o.query ? r : o.query + (r - o.query) % o.item_len;
    }
    for (int32_t i = 0; i < o.items; i++) {
        begin[i] = o.query + i * o.item_len;
        end[i] = begin[i] + o.item_len;
        scored[i] = end[i] - 1;
    }
    forward_profile best[MAX_COUNTS];
    double total[MAX_COUNTS];
    for (int ci = 0; ci < n_counts; ci++) {
        omp_set_num_threads(counts[ci]);
        total[ci] = 1e30;
        for (int p = 0; p < FORWARD_PHASES; p++)
            best[ci].seconds[p] = 1e30;
        for (int rep = 0; rep <= o.reps; rep++) { /* rep 0 warms up */
            forward_profile prof = {{0}};
            const forward_batch b = {
                .layout = {.n_rows = rows,
                           .prefix_rows = o.query,
                           .n_segments = o.items,
                           .seg_begin = begin,
                           .seg_end = end},
                .tokens = tokens,
                .positions = positions,
                .n_score_rows = o.items,
                .score_rows = scored,
                .n_labels = 4,
                .labels = labels,
                .label_logprobs = logprobs,
                .profile = &prof,
            };
            if (forward_run(e->model, e->weights, &e->tune, &b, &err) != LMS_OK) {
                fprintf(stderr, "bench_phases: %s\n", err.msg);
                return 1;
            }
            if (rep == 0) continue;
            double sum = 0;
            for (int p = 0; p < FORWARD_PHASES; p++) {
                sum += prof.seconds[p];
                if (prof.seconds[p] < best[ci].seconds[p]) best[ci].seconds[p] = prof.seconds[p];
            }
            if (sum < total[ci]) total[ci] = sum;
        }
    }
    lms_model_info mi;
    lms_engine_model_info(e, &mi);
    printf(
        "%s, %s (%s tier): a %d-token query and %d items of %d tokens in one pass; best of %d\n\n",
        mi.name, mi.precision, mi.isa, o.query, o.items, o.item_len, o.reps);
    printf("| phase |");
    for (int ci = 0; ci < n_counts; ci++)
        printf(" %d thread%s, ms |", counts[ci], counts[ci] > 1 ? "s" : "");
    printf(" share | speed-up %d → %d | 16 threads by Amdahl |\n|---|", counts[0],
           counts[n_counts - 1]);
    for (int ci = 0; ci < n_counts + 3; ci++)
        printf("---|");
    printf("\n");
    const double threads = counts[n_counts - 1] / (double)counts[0];
    for (int p = 0; p <= FORWARD_PHASES; p++) {
        const double first = p < FORWARD_PHASES ? best[0].seconds[p] : total[0];
        const double last =
            p < FORWARD_PHASES ? best[n_counts - 1].seconds[p] : total[n_counts - 1];
        printf("| %s |", p < FORWARD_PHASES ? forward_phase_names[p] : "**pass**");
        for (int ci = 0; ci < n_counts; ci++)
            printf(" %.1f |", 1e3 * (p < FORWARD_PHASES ? best[ci].seconds[p] : total[ci]));
        /* parallel fraction f from speed-up s over a thread ratio t: s = 1 / ((1 - f) + f / t) */
        const double s = last > 0 ? first / last : 1.0;
        const double f = threads > 1 ? (1.0 - 1.0 / s) / (1.0 - 1.0 / threads) : 1.0;
        const double f16 = f < 0 ? 0 : f > 1 ? 1 : f;
        printf(" %.1f%% | %.2f× | %.1f× |\n", 100.0 * first / total[0], s,
               1.0 / ((1.0 - f16) + f16 * counts[0] / 16.0));
    }
    free(tokens);
    free(positions);
    free(begin);
    free(end);
    free(scored);
    free(logprobs);
    lms_engine_close(e);
    return 0;
}
