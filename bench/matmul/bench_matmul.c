/*
 * bench_matmul — the projection kernels (engine/compute/matmul.c) against
 * the libraries that could replace them, at a model's projection shapes, in
 * one run.
 *
 *   bench_matmul [--reps N] [--isa TIER] [--clock wall|cpu] [--model 0.6b|8b|all]
 *                [--rows M,...] [--methods NAME,...] [--smoke]
 *
 * For y[M×N] = x[M×K]·Wᵀ at a model's projection shapes — Qwen3-0.6B's by
 * default (N×K = 2048×1024 for q, 3072×1024 for gate/up, 1024×3072 for
 * down), Qwen3-8B's with --model 8b (4096×4096, 12288×4096, 4096×12288) —
 * and M = 32, 128, 512, 2000 (or --rows), it times on all OpenMP threads
 * (--methods: only those named, and sgemm, the reference):
 *
 *   sgemm        one threaded OpenBLAS call
 *   f32, bf16, bf16x2, int8, int8x2   lmscore's projections (matmul) on
 *                the tier's kernels, W packed in that format, x quantised
 *                (on a tier with bf16 activations, rounded to bf16) per call
 *                to one or two codes (values) per value
 *   dnnl f32/bf16/int8   oneDNN's matmul primitive (when built with
 *                oneDNN), weights reordered once into the format it asks
 *                for; bf16 is given x already in bf16, int8 x already in
 *                u8 with one scale and W as s8 with one scale per output
 *                channel (oneDNN 2.x has no per-block scales: the int8
 *                format lmscore needs for exact GGUF blocks and for its
 *                accuracy gates is not expressible there)
 *
 * Each is the best of N runs (default 5) after one warm-up; the table gives
 * GFLOP/s and the ratio to sgemm measured in the same run, and for
 * lmscore's projections the share of the peak of the instruction the
 * tier's kernel rests on (bench/peak/peak.h: one core's rate, measured at
 * the start, times the threads). lmscore's
 * kernels are checked against sgemm on the way (relative error bounds per
 * precision); the exit status is 1 when one is off.
 */
#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef LMSCORE_BENCH_DNNL
#include <dnnl.h>
#endif

#include "alloc.h"
#include "clock.h"
#include "cpu.h"
#include "matmul.h"
#include "peak.h"
#include "weights_pack.h"

typedef struct {
    const char *model, *name;
    int32_t n, k;
} shape;

static const shape SHAPES[] = {
    {"0.6b", "q", 2048, 1024}, {"0.6b", "gate/up", 3072, 1024}, {"0.6b", "down", 1024, 3072},
    {"8b", "q", 4096, 4096},   {"8b", "gate/up", 12288, 4096},  {"8b", "down", 4096, 12288},
};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])
#define MAX_ROWS 16
static int32_t rows_list[MAX_ROWS] = {32, 128, 512, 2000};
static int n_rows_list = 4;

enum { SGEMM, F32, BF16, BF16X2, INT8, INT8X2, DNNL_F32, DNNL_BF16, DNNL_INT8, N_METHODS };

/* The peak of all threads (GFLOP/s or GOP/s) of the instruction under each
 * of lmscore's methods, 0 where there is none (peak.h). */
static double method_peak[N_METHODS];
static const char *METHOD_NAMES[N_METHODS] = {"sgemm",  "f32",      "bf16",      "bf16x2",   "int8",
                                              "int8x2", "dnnl f32", "dnnl bf16", "dnnl int8"};
/* The methods timed (--methods); sgemm always is: the reference. */
static bool method_on[N_METHODS] = {true, true, true, true, true, true, true, true, true};

typedef struct {
    const shape *s;
    int32_t m;
    const float *x, *w;
    float *y;
} problem;

/* A runner computes y for p; ctx holds what it prepared. */
typedef void runner(const problem *p, void *ctx);

/* What a run is timed by: wall time, or (--clock cpu) the process's CPU
 * time over the thread count, which other processes on a shared machine do
 * not inflate (with OMP_WAIT_POLICY=passive: idle threads then sleep). */
static bool cpu_clock;

static double now(void)
{
    return cpu_clock ? process_cpu_seconds() / omp_get_max_threads() : monotonic_seconds();
}

static double best_seconds(runner *run, const problem *p, void *ctx, int reps)
{
    run(p, ctx);
    double best = 1e30;
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        run(p, ctx);
        double t = now() - t0;
        if (t < best) best = t;
    }
    return best;
}

static void run_sgemm(const problem *p, void *ctx)
{
    (void)ctx;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, p->m, p->s->n, p->s->k, 1.0f, p->x,
                p->s->k, p->w, p->s->k, 0.0f, p->y, p->s->n);
}

typedef struct {
    const matmul_config *cfg;
    const lms_weights *w;
    matmul_scratch *scratch;
} lms_ctx;

static void run_lmscore(const problem *p, void *ctx)
{
    const lms_ctx *c = ctx;
    matmul(c->cfg, c->w, p->x, p->m, KERNEL_STORE, p->y, c->scratch);
}

/* max |y - ref| / max |ref|: the error relative to the output's scale. */
static double relative_error(const float *y, const float *ref, size_t n)
{
    double err = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        err = fmax(err, fabs((double)y[i] - ref[i]));
        scale = fmax(scale, fabs((double)ref[i]));
    }
    return scale > 0 ? err / scale : err;
}

#ifdef LMSCORE_BENCH_DNNL
typedef struct {
    dnnl_engine_t engine;
    dnnl_stream_t stream;
    dnnl_primitive_t matmul;
    dnnl_memory_t src, weights, dst;
} dnnl_ctx;

#define DNNL_TRY(call)                                                                             \
    do {                                                                                           \
        if ((call) != dnnl_success) {                                                              \
            fprintf(stderr, "bench_matmul: oneDNN: %s failed\n", #call);                           \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

/* A matmul primitive of the given types over src (M×K, row-major) and the
 * weights w_user (N×K row-major of w_type, i.e. K×N in tag ba), reordered
 * into the primitive's format. scales: one per output channel, or NULL. */
static bool dnnl_setup(dnnl_ctx *c, const problem *p, dnnl_data_type_t src_type, const void *src,
                       dnnl_data_type_t w_type, const void *w_user, const float *scales)
{
    const int32_t m = p->m, n = p->s->n, k = p->s->k;
    dnnl_memory_desc_t src_md, w_any, w_user_md, dst_md;
    dnnl_dims_t src_dims = {m, k}, w_dims = {k, n}, dst_dims = {m, n};
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&src_md, 2, src_dims, src_type, dnnl_ab));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_any, 2, w_dims, w_type, dnnl_format_tag_any));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&w_user_md, 2, w_dims, w_type, dnnl_ba));
    DNNL_TRY(dnnl_memory_desc_init_by_tag(&dst_md, 2, dst_dims, dnnl_f32, dnnl_ab));
    dnnl_matmul_desc_t desc;
    DNNL_TRY(dnnl_matmul_desc_init(&desc, &src_md, &w_any, NULL, &dst_md));
    dnnl_primitive_attr_t attr;
    DNNL_TRY(dnnl_primitive_attr_create(&attr));
    if (scales) DNNL_TRY(dnnl_primitive_attr_set_output_scales(attr, n, 1 << 1, scales));
    dnnl_primitive_desc_t pd;
    dnnl_status_t st = dnnl_primitive_desc_create(&pd, &desc, attr, c->engine, NULL);
    dnnl_primitive_attr_destroy(attr);
    DNNL_TRY(st);
    const dnnl_memory_desc_t *w_md = dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0);
    dnnl_memory_t w_user_mem;
    DNNL_TRY(dnnl_memory_create(&w_user_mem, &w_user_md, c->engine, (void *)w_user));
    DNNL_TRY(dnnl_memory_create(&c->weights, w_md, c->engine, DNNL_MEMORY_ALLOCATE));
    dnnl_primitive_desc_t reorder_pd;
    DNNL_TRY(dnnl_reorder_primitive_desc_create(&reorder_pd, &w_user_md, c->engine, w_md, c->engine,
                                                NULL));
    dnnl_primitive_t reorder;
    DNNL_TRY(dnnl_primitive_create(&reorder, reorder_pd));
    dnnl_exec_arg_t reorder_args[2] = {{DNNL_ARG_FROM, w_user_mem}, {DNNL_ARG_TO, c->weights}};
    DNNL_TRY(dnnl_primitive_execute(reorder, c->stream, 2, reorder_args));
    DNNL_TRY(dnnl_stream_wait(c->stream));
    dnnl_primitive_destroy(reorder);
    dnnl_primitive_desc_destroy(reorder_pd);
    dnnl_memory_destroy(w_user_mem);
    DNNL_TRY(dnnl_memory_create(&c->src, &src_md, c->engine, (void *)src));
    DNNL_TRY(dnnl_memory_create(&c->dst, &dst_md, c->engine, p->y));
    DNNL_TRY(dnnl_primitive_create(&c->matmul, pd));
    dnnl_primitive_desc_destroy(pd);
    return true;
}

static void dnnl_teardown(dnnl_ctx *c)
{
    dnnl_primitive_destroy(c->matmul);
    dnnl_memory_destroy(c->src);
    dnnl_memory_destroy(c->weights);
    dnnl_memory_destroy(c->dst);
}

static void run_dnnl(const problem *p, void *ctx)
{
    (void)p;
    const dnnl_ctx *c = ctx;
    dnnl_exec_arg_t args[3] = {
        {DNNL_ARG_SRC, c->src}, {DNNL_ARG_WEIGHTS, c->weights}, {DNNL_ARG_DST, c->dst}};
    dnnl_primitive_execute(c->matmul, c->stream, 3, args);
    dnnl_stream_wait(c->stream);
}

static uint16_t to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* The oneDNN methods for p; seconds[] of those that ran, -1 for the rest. */
static void time_dnnl(dnnl_engine_t engine, dnnl_stream_t stream, const problem *p, int reps,
                      double *seconds)
{
    const int32_t m = p->m, n = p->s->n, k = p->s->k;
    const size_t xs = (size_t)m * k, ws = (size_t)n * k;
    uint16_t *x16 = malloc(xs * 2), *w16 = malloc(ws * 2);
    uint8_t *xu8 = malloc(xs);
    int8_t *ws8 = malloc(ws);
    float *wscale = malloc((size_t)n * sizeof *wscale);
    if (!x16 || !w16 || !xu8 || !ws8 || !wscale) goto done;
    for (size_t i = 0; i < xs; i++)
        x16[i] = to_bf16(p->x[i]);
    for (size_t i = 0; i < ws; i++)
        w16[i] = to_bf16(p->w[i]);
    /* x as u8 around 128 would need a zero point; |x| as u8 keeps the timing
     * honest (the same instructions) without one. */
    float xmax = 0;
    for (size_t i = 0; i < xs; i++)
        xmax = fmaxf(xmax, fabsf(p->x[i]));
    for (size_t i = 0; i < xs; i++)
        xu8[i] = (uint8_t)lrintf(fabsf(p->x[i]) / xmax * 255);
    for (int32_t r = 0; r < n; r++) {
        float wmax = 0;
        for (int32_t j = 0; j < k; j++)
            wmax = fmaxf(wmax, fabsf(p->w[(size_t)r * k + j]));
        for (int32_t j = 0; j < k; j++)
            ws8[(size_t)r * k + j] = (int8_t)lrintf(p->w[(size_t)r * k + j] / wmax * 127);
        wscale[r] = wmax / 127 * xmax / 255;
    }
    const struct {
        int method;
        dnnl_data_type_t src_type, w_type;
        const void *src, *w;
        const float *scales;
    } runs[] = {{DNNL_F32, dnnl_f32, dnnl_f32, p->x, p->w, NULL},
                {DNNL_BF16, dnnl_bf16, dnnl_bf16, x16, w16, NULL},
                {DNNL_INT8, dnnl_u8, dnnl_s8, xu8, ws8, wscale}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        if (!method_on[runs[i].method]) continue;
        dnnl_ctx c = {.engine = engine, .stream = stream};
        if (!dnnl_setup(&c, p, runs[i].src_type, runs[i].src, runs[i].w_type, runs[i].w,
                        runs[i].scales))
            continue;
        seconds[runs[i].method] = best_seconds(run_dnnl, p, &c, reps);
        dnnl_teardown(&c);
    }
done:
    free(x16);
    free(w16);
    free(xu8);
    free(ws8);
    free(wscale);
}
#endif

/* W packed from f32 into format; false on failure. The caller lms_frees *buffer. */
/* w as tier keeps it: the format's layout with what the tier owns of it
 * (compute_tier_own_layout: its BF16 panel order, its signed Q8 codes), as
 * the engine packs it. */
static bool pack(const compute_tier *tier, const float *w, int32_t n, int32_t k,
                 lms_weights_format format, lms_weights *out, void **buffer)
{
    lms_error err;
    if (lms_weights_alloc(out, LMS_DTYPE_F32, format, n, k, buffer, &err) != LMS_OK) {
        fprintf(stderr, "bench_matmul: %s\n", err.msg);
        return false;
    }
    compute_tier_own_layout(tier, out);
    lms_pack_job job = {LMS_DTYPE_F32, w, out, false};
    if (lms_pack_run(&job, 1, NULL, &err) != LMS_OK) {
        fprintf(stderr, "bench_matmul: %s\n", err.msg);
        return false;
    }
    return true;
}

static float uniform(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*state >> 40) * (1.0 / (1 << 24)) * 2 - 1);
}

/* Times every method on one shape and M; prints its table row. Returns
 * false when a kernel's result is off. */
static bool bench_one(const matmul_config *cfg, const shape *s, int32_t m, int reps, const float *x,
                      const float *w, float *y, float *ref, void *dnnl)
{
    problem p = {s, m, x, w, y};
    double seconds[N_METHODS];
    for (int i = 0; i < N_METHODS; i++)
        seconds[i] = -1;
    bool ok = true;
    const size_t out = (size_t)m * s->n;

    seconds[SGEMM] = best_seconds(run_sgemm, &p, NULL, reps);
    memcpy(ref, y, out * sizeof *ref);

    matmul_scratch *scratch = matmul_scratch_create(m, s->k);
    const struct {
        int method;
        lms_weights_format format;
        double bound; /* relative error vs sgemm */
    } runs[] = {{F32, LMS_WEIGHTS_F32, 1e-5},
                {BF16, LMS_WEIGHTS_BF16, 2e-2},
                {BF16X2, LMS_WEIGHTS_BF16, 2e-2},
                {INT8, LMS_WEIGHTS_Q8, 2e-2},
                {INT8X2, LMS_WEIGHTS_Q8, 2e-2}};
    for (size_t i = 0; scratch && i < sizeof runs / sizeof runs[0]; i++) {
        if (!method_on[runs[i].method] || !compute_tier_multiplies(cfg->tier, runs[i].format))
            continue;
        lms_weights lw;
        void *buffer = NULL;
        if (!pack(cfg->tier, w, s->n, s->k, runs[i].format, &lw, &buffer)) {
            ok = false;
            continue;
        }
        lw.x_codes = runs[i].method == INT8X2 || runs[i].method == BF16X2 ? 2 : 1;
        lms_ctx c = {cfg, &lw, scratch};
        seconds[runs[i].method] = best_seconds(run_lmscore, &p, &c, reps);
        double e = relative_error(y, ref, out);
        if (e > runs[i].bound) {
            fprintf(stderr, "bench_matmul: %s on %s M=%d: relative error %.3g > %.3g\n",
                    METHOD_NAMES[runs[i].method], s->name, m, e, runs[i].bound);
            ok = false;
        }
        lms_free(buffer);
    }
    matmul_scratch_free(scratch);
#ifdef LMSCORE_BENCH_DNNL
    dnnl_ctx *d = dnnl;
    time_dnnl(d->engine, d->stream, &p, reps, seconds);
#else
    (void)dnnl;
#endif

    const double flop = 2.0 * m * s->n * s->k;
    if (strcmp(s->model, "0.6b"))
        printf("| %s %s %d×%d | %d |", s->model, s->name, s->n, s->k, m);
    else
        printf("| %s %d×%d | %d |", s->name, s->n, s->k, m);
    for (int i = 0; i < N_METHODS; i++) {
        if (!method_on[i]) continue;
        if (seconds[i] < 0)
            printf(" – |");
        else if (i == SGEMM)
            printf(" %.0f |", flop / seconds[i] * 1e-9);
        else if (method_peak[i] > 0)
            printf(" %.0f (%.2f×, %.0f%%) |", flop / seconds[i] * 1e-9, seconds[SGEMM] / seconds[i],
                   100 * flop / seconds[i] * 1e-9 / method_peak[i]);
        else
            printf(" %.0f (%.2f×) |", flop / seconds[i] * 1e-9, seconds[SGEMM] / seconds[i]);
    }
    printf("\n");
    fflush(stdout);
    return ok;
}

/* --rows: a comma-separated list of positive M. */
static bool parse_rows(const char *list)
{
    n_rows_list = 0;
    for (const char *p = list; *p;) {
        char *end;
        const long m = strtol(p, &end, 10);
        if (end == p || m <= 0 || m > 1 << 20 || n_rows_list == MAX_ROWS) return false;
        rows_list[n_rows_list++] = (int32_t)m;
        p = *end == ',' ? end + 1 : end;
        if (*end && *end != ',') return false;
    }
    return n_rows_list > 0;
}

/* --methods: a comma-separated list of METHOD_NAMES. */
static bool parse_methods(const char *list)
{
    for (int i = 1; i < N_METHODS; i++)
        method_on[i] = false;
    for (const char *p = list; *p;) {
        const size_t len = strcspn(p, ",");
        int found = -1;
        for (int i = 0; i < N_METHODS; i++)
            if (strlen(METHOD_NAMES[i]) == len && !strncmp(p, METHOD_NAMES[i], len)) found = i;
        if (found < 0) return false;
        method_on[found] = true;
        p += len + (p[len] == ',');
    }
    return true;
}

static bool shape_on(const shape *s, const char *model)
{
    return !strcmp(model, "all") || !strcmp(model, s->model);
}

int main(int argc, char **argv)
{
    int reps = 5;
    bool smoke = false, ok_args = true;
    const char *isa = "auto", *model = "0.6b";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (strcmp(argv[i], "--isa") == 0 && i + 1 < argc)
            isa = argv[++i];
        else if (strcmp(argv[i], "--clock") == 0 && i + 1 < argc)
            cpu_clock = strcmp(argv[++i], "cpu") == 0;
        else if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[++i];
        else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc)
            ok_args &= parse_rows(argv[++i]);
        else if (strcmp(argv[i], "--methods") == 0 && i + 1 < argc)
            ok_args &= parse_methods(argv[++i]);
        else if (strcmp(argv[i], "--smoke") == 0)
            smoke = true;
        else
            ok_args = false;
    }
    if (!ok_args || (strcmp(model, "0.6b") && strcmp(model, "8b") && strcmp(model, "all"))) {
        fprintf(stderr,
                "usage: bench_matmul [--reps N] [--isa %s] [--clock wall|cpu] "
                "[--model 0.6b|8b|all] [--rows M,...] [--methods NAME,...] [--smoke]\n",
                lms_isa_names());
        return 2;
    }
    if (smoke) {
        rows_list[0] = 32;
        n_rows_list = 1;
    }
    lms_cpu_features cpu;
    lms_cpu_detect(&cpu);
    const compute_tier *tier;
    lms_error err = {0};
    if (compute_tier_select(isa, &cpu, &tier, NULL, 0, &err) != LMS_OK) {
        fprintf(stderr, "bench_matmul: %s\n", err.msg);
        return 2;
    }
    const matmul_config cfg = {tier};

    int32_t max_n = 0, max_k = 0, max_m = 0;
    for (int s = 0; s < N_SHAPES; s++) {
        if (!shape_on(&SHAPES[s], model)) continue;
        max_n = SHAPES[s].n > max_n ? SHAPES[s].n : max_n;
        max_k = SHAPES[s].k > max_k ? SHAPES[s].k : max_k;
    }
    for (int r = 0; r < n_rows_list; r++)
        max_m = rows_list[r] > max_m ? rows_list[r] : max_m;
    float *x = malloc((size_t)max_m * max_k * sizeof *x);
    float *w = malloc((size_t)max_n * max_k * sizeof *w);
    float *y = malloc((size_t)max_m * max_n * sizeof *y);
    float *ref = malloc((size_t)max_m * max_n * sizeof *ref);
    if (!x || !w || !y || !ref) {
        fprintf(stderr, "bench_matmul: no memory\n");
        return 1;
    }
    uint64_t seed = 1;
    for (size_t i = 0; i < (size_t)max_m * max_k; i++)
        x[i] = uniform(&seed);
    for (size_t i = 0; i < (size_t)max_n * max_k; i++)
        w[i] = 0.03f * uniform(&seed);

    void *dnnl = NULL;
    const char *dnnl_note = "not built (oneDNN headers not found at configure time)";
#ifdef LMSCORE_BENCH_DNNL
    dnnl_ctx d = {0};
    if (dnnl_engine_create(&d.engine, dnnl_cpu, 0) == dnnl_success &&
        dnnl_stream_create(&d.stream, d.engine, dnnl_stream_default_flags) == dnnl_success) {
        const dnnl_version_t *v = dnnl_version();
        static char note[80];
        snprintf(note, sizeof note, "%d.%d.%d", v->major, v->minor, v->patch);
        dnnl_note = note;
        dnnl = &d;
    }
#endif
    printf("threads %d; tier %s: f32 %s, bf16 %s, int8 %s; OpenBLAS %s (core %s); oneDNN %s\n",
           omp_get_max_threads(), tier->name, tier->kernels->f32->isa,
           tier->bf16_activations ? tier->name
           : tier->kernels->w16   ? tier->kernels->w16->isa
                                  : "–",
           tier->kernels->q8 ? tier->kernels->q8->isa : "–", openblas_get_config(),
           openblas_get_corename(), dnnl_note);
    const struct {
        int method;
        lms_weights_format format;
    } peaks[] = {{F32, LMS_WEIGHTS_F32},
                 {BF16, LMS_WEIGHTS_BF16},
                 {BF16X2, LMS_WEIGHTS_BF16},
                 {INT8, LMS_WEIGHTS_Q8},
                 {INT8X2, LMS_WEIGHTS_Q8}};
    double core_peak[PEAK_N] = {0}; /* each instruction measured once */
    printf("peak per core (bench_peak):");
    for (size_t i = 0; i < sizeof peaks / sizeof *peaks; i++) {
        const peak_kind kind = peak_of_tier(tier, peaks[i].format);
        if (!method_on[peaks[i].method] || kind == PEAK_NONE || !peak_available(kind)) continue;
        if (!core_peak[kind]) core_peak[kind] = peak_rate(kind, smoke ? 0.01 : 0.5);
        const double core = core_peak[kind];
        method_peak[peaks[i].method] = core * omp_get_max_threads();
        printf(" %s `%s` %.1f %s;", METHOD_NAMES[peaks[i].method], peak_instruction(kind), core,
               peak_unit(kind));
    }
    printf(" times %d threads\n", omp_get_max_threads());
    printf("GFLOP/s (GOP/s for int8), best of %d by %s; in brackets the speed-up over sgemm in "
           "this run and, for lmscore's kernels, the share of the peak of all threads\n\n",
           reps, cpu_clock ? "CPU time per thread" : "wall time");
    printf("| shape N×K | M |");
    for (int i = 0; i < N_METHODS; i++)
        if (method_on[i]) printf(" %s |", METHOD_NAMES[i]);
    printf("\n|---|---|");
    for (int i = 0; i < N_METHODS; i++)
        if (method_on[i]) printf("---|");
    printf("\n");

    bool ok = true;
    for (int s = 0; s < N_SHAPES; s++)
        for (int r = 0; shape_on(&SHAPES[s], model) && r < n_rows_list; r++)
            ok &= bench_one(&cfg, &SHAPES[s], rows_list[r], reps, x, w, y, ref, dnnl);
#ifdef LMSCORE_BENCH_DNNL
    if (dnnl) {
        dnnl_stream_destroy(d.stream);
        dnnl_engine_destroy(d.engine);
    }
#endif
    free(x);
    free(w);
    free(y);
    free(ref);
    return ok ? 0 : 1;
}
