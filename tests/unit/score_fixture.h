/*
 * score_fixture.h — helpers shared by the scoring tests: opening the demo
 * model from the build tree, random requests, and comparisons.
 *
 * The environment can run a test program in another precision:
 * LMSCORE_TEST_MODEL names the model file under the build tree's models/
 * (default tiny-qwen3.gguf), LMSCORE_TEST_PRECISION the precision (auto,
 * f32, bf16, int8; default: the options'), LMSCORE_TEST_ISA the compute tier
 * (default: the options'). A tier the CPU cannot run, or one that does not
 * multiply in the precision asked for, skips the program with exit code
 * FIXTURE_SKIPPED, which CTest reports as skipped.
 */
#ifndef LMS_TEST_SCORE_FIXTURE_H
#define LMS_TEST_SCORE_FIXTURE_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lmscore.h"

#define FIXTURE_SKIPPED 77

/* The options a test starts from and changes: the engine's defaults. */
static inline lms_engine_options fixture_options(void)
{
    lms_engine_options o;
    lms_engine_options_default(&o);
    return o;
}

static inline lms_engine *fixture_open(const lms_engine_options *opt)
{
    const char *dir = getenv("LMSCORE_BUILD_DIR"), *model = getenv("LMSCORE_TEST_MODEL");
    const char *precision = getenv("LMSCORE_TEST_PRECISION"), *isa = getenv("LMSCORE_TEST_ISA");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", dir ? dir : "build",
             model ? model : "tiny-qwen3.gguf");
    lms_engine_options o = opt ? *opt : fixture_options();
    if (precision && !lms_precision_parse(precision, &o.precision)) {
        fprintf(stderr, "LMSCORE_TEST_PRECISION=%s: unknown precision\n", precision);
        return NULL;
    }
    if (isa) o.isa = isa;
    lms_engine *e = NULL;
    lms_error err = {0};
    if (lms_engine_open(path, &o, &e, &err) != LMS_OK) {
        if (err.status == LMS_ERR_UNSUPPORTED && !strcmp(err.field, "isa")) {
            printf("skipped: %s\n", err.msg);
            exit(FIXTURE_SKIPPED);
        }
        fprintf(stderr, "cannot open %s: %s\n", path, err.msg);
        return NULL;
    }
    lms_model_info mi;
    lms_engine_model_info(e, &mi);
    if (precision && o.precision != LMS_PRECISION_AUTO &&
        strcmp(mi.precision, lms_precision_name(o.precision)) != 0) {
        printf("skipped: the %s tier runs %s as %s (%s)\n", mi.isa, precision, mi.precision,
               mi.precision_reason);
        lms_engine_close(e);
        exit(FIXTURE_SKIPPED);
    }
    return e;
}

/* A request whose token buffers the fixture owns. */
typedef struct {
    lms_score_request req;
    int32_t *query;
    lms_tokens *items;
    int32_t **item_ids;
    int32_t *labels; /* [4] */
} fixture_request;

static inline uint64_t fixture_rand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

/* Token ids avoid 0..99 so a delimiter chosen there never collides. */
static inline fixture_request fixture_request_make(uint64_t seed, int32_t q, int32_t n,
                                                   int32_t min_len, int32_t max_len)
{
    fixture_request made = {0}, *f = &made;
    f->query = malloc((size_t)(q + 1) * sizeof(int32_t));
    f->labels = malloc(4 * sizeof(int32_t));
    f->items = calloc((size_t)n + 1, sizeof(lms_tokens));
    f->item_ids = calloc((size_t)n + 1, sizeof(int32_t *));
    for (int32_t i = 0; i < q; i++)
        f->query[i] = 100 + (int32_t)(fixture_rand(&seed) % 150000);
    for (int32_t i = 0; i < n; i++) {
        int32_t len = min_len + (int32_t)(fixture_rand(&seed) % (uint64_t)(max_len - min_len + 1));
        f->item_ids[i] = malloc((size_t)(len + 1) * sizeof(int32_t));
        for (int32_t k = 0; k < len; k++)
            f->item_ids[i][k] = 100 + (int32_t)(fixture_rand(&seed) % 150000);
        f->items[i].ids = f->item_ids[i];
        f->items[i].len = len;
    }
    f->labels[0] = 100 + (int32_t)(fixture_rand(&seed) % 150000);
    f->labels[1] = 100 + (int32_t)(fixture_rand(&seed) % 150000);
    f->labels[2] = 151643; /* <|endoftext|> */
    f->labels[3] = 100 + (int32_t)(fixture_rand(&seed) % 150000);
    f->req.query.ids = f->query;
    f->req.query.len = q;
    f->req.items = f->items;
    f->req.n_items = n;
    f->req.label_ids = f->labels;
    f->req.n_labels = 4;
    return made;
}

static inline void fixture_request_free(fixture_request *f)
{
    for (int32_t i = 0; i < f->req.n_items; i++)
        free(f->item_ids[i]);
    free(f->item_ids);
    free(f->items);
    free(f->query);
    free(f->labels);
}

static inline lms_score_result fixture_score(lms_engine *e, const lms_score_request *req,
                                             lms_algorithm algo)
{
    lms_score_request r = *req;
    r.algorithm = algo;
    lms_score_result res;
    lms_error err = {0};
    if (lms_engine_score(e, &r, NULL, &res, &err) != LMS_OK) {
        fprintf(stderr, "%s failed: %s (%s)\n", lms_algorithm_name(algo), err.msg, err.reason);
        memset(&res, 0, sizeof res);
    }
    return res;
}

/* The multi-item algorithms: every algorithm but serial, their reference. */
static inline const lms_algorithm *fixture_multi_algorithms(size_t *n)
{
    static const lms_algorithm multi[] = {LMS_ALGO_PACKED_DENSE, LMS_ALGO_PACKED_SEGMENT,
                                          LMS_ALGO_PREFILL_EXTEND};
    *n = sizeof multi / sizeof *multi;
    return multi;
}

static inline double fixture_max_diff(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    return m;
}

#endif
