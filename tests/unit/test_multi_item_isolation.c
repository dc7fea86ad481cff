/*
 * test_multi_item_isolation.c — changing one item never changes another
 * item's numbers, to the bit, in every algorithm. Runs on the demo model
 * (tiny-qwen3) from the build tree.
 *
 * What breaks isolation is how OpenBLAS computes a row: by its position in
 * the kernel's register tile, and, in a threaded call, by where the call's
 * rows are split between threads. So the request is built for that: packs
 * of a few hundred rows whose total changes with the mutated item (items
 * move between packs), projections far above the size at which OpenBLAS
 * threads a call, and at least two threads whatever the machine has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <cblas.h>
#include <omp.h>

#include "score_fixture.h"

/* OpenBLAS 0.3.21 runs an sgemm on one thread when M·N·K <= 65,536 × 4. */
#define BLAS_THREADED_MNK 262144

static void test_isolation_is_exact(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.max_packed_tokens = 256; /* several packs: items move between packs */
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
    /* A pack is closed only when the next item (at most 20 tokens and its
     * padding) does not fit, so each but the last holds over half the
     * budget: its FFN projections are threaded. */
    lms_model_info model;
    lms_engine_model_info(e, &model);
    assert_true((int64_t)(opt.max_packed_tokens / 2) * model.d_model * model.d_ff >
                BLAS_THREADED_MNK);
    assert_true(omp_get_max_threads() >= 2);

    fixture_request f = fixture_request_make(5, 33, 30, 0, 20);
    const int32_t victim = 7;
    size_t n_multi;
    const lms_algorithm *multi = fixture_multi_algorithms(&n_multi);
    for (size_t a = 0; a < n_multi + 1; a++) {
        lms_algorithm algo = a < n_multi ? multi[a] : LMS_ALGO_SERIAL;
        lms_score_result base = fixture_score(e, &f.req, algo);
        assert_non_null(base.scores);
        for (int mode = 0; mode < 3; mode++) {
            /* 0: same length new tokens; 1: longer; 2: shorter (maybe empty) */
            int32_t old_len = f.items[victim].len;
            int32_t *old = f.item_ids[victim];
            int32_t new_len = mode == 0 ? old_len : mode == 1 ? old_len + 13 : old_len / 3;
            int32_t *ids = malloc((size_t)(new_len + 1) * sizeof *ids);
            for (int32_t k = 0; k < new_len; k++)
                ids[k] = 5000 + 17 * k + mode;
            f.items[victim].ids = ids;
            f.items[victim].len = new_len;
            lms_score_result r = fixture_score(e, &f.req, algo);
            assert_non_null(r.scores);
            for (int32_t i = 0; i < f.req.n_items; i++) {
                if (i == victim) continue;
                if (memcmp(base.logprobs + i * 4, r.logprobs + i * 4, 4 * sizeof(float)) ||
                    memcmp(base.scores + i * 4, r.scores + i * 4, 4 * sizeof(float)))
                    fail_msg("%s: mutation %d of item %d changed item %d (%.9g vs %.9g)",
                             lms_algorithm_name(algo), mode, victim, i, base.logprobs[i * 4],
                             r.logprobs[i * 4]);
            }
            lms_score_result_free(&r);
            free(ids);
            f.items[victim].ids = old;
            f.items[victim].len = old_len;
        }
        lms_score_result_free(&base);
    }
    fixture_request_free(&f);
    lms_engine_close(e);
}

int main(void)
{
    /* On a one-CPU machine OpenBLAS and OpenMP would run single-threaded and
     * no call's rows would be split. openblas_set_num_threads sets both. */
    if (omp_get_max_threads() < 2) openblas_set_num_threads(2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isolation_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
