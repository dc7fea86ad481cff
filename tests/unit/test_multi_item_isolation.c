/*
 * test_multi_item_isolation.c — changing one item never changes another
 * item's numbers, to the bit, in every algorithm. Runs on the demo model
 * (tiny-qwen3) from the build tree.
 *
 * What would break isolation is a row computed differently by where it
 * falls: in a kernel's group of rows, in a tile of the grid, or in a batch
 * whose size depends on the other items. So the request is built for
 * that: packs of a few hundred rows whose total changes with the mutated
 * item (items move between packs and between tiles), and at least two
 * threads whatever the machine has.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <omp.h>

#include "score_fixture.h"

static void test_isolation_is_exact(void **state)
{
    (void)state;
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.max_packed_tokens = 256; /* several packs: items move between packs */
    lms_engine *e = fixture_open(&opt);
    assert_non_null(e);
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
    /* At least two threads, so that a batch's tiles are spread over threads
     * even on a one-CPU machine. */
    if (omp_get_max_threads() < 2) omp_set_num_threads(2);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isolation_is_exact),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
