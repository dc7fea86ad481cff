/*
 * test_selector.c — the cost model's choices on the benchmark workloads of
 * docs/benchmarks.md, on the geometry make bench measures (the model maker's
 * qwen3-0.6b preset), and its guards.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <stdlib.h>

#include "make_model/mm_spec.h"
#include "selector.h"

/* What the cost model reads of the model: its geometry. */
static lms_model_config bench_geometry(void)
{
    mm_spec s;
    lms_error err;
    if (mm_spec_preset("qwen3-0.6b", &s, &err) != LMS_OK) fail_msg("%s", err.msg);
    return (lms_model_config){.arch = LMS_ARCH_QWEN3,
                              .n_layers = s.n_layers,
                              .d_model = s.d_model,
                              .n_heads = s.n_heads,
                              .n_kv_heads = s.n_kv_heads,
                              .head_dim = s.head_dim,
                              .d_ff = s.d_ff,
                              .vocab_size = s.vocab_size,
                              .context_length = s.context_length};
}

static lms_algorithm pick(int32_t q, int32_t n, int32_t l, bool cached, int32_t dense_max)
{
    int32_t *lens = malloc((size_t)n * sizeof *lens);
    for (int32_t i = 0; i < n; i++)
        lens[i] = l;
    selector_input in = {.prefix_len = q,
                         .n_items = n,
                         .item_len = lens,
                         .max_packed_tokens = 8192,
                         .dense_mask_max_tokens = dense_max,
                         .prefix_cached = cached};
    selector_choice ch;
    const lms_model_config geometry = bench_geometry();
    selector_choose(&geometry, &in, &ch);
    free(lens);
    return ch.best;
}

/* One pass beats two while the items fit one pack; the query once beats a
 * query per pack. On (a), (c) and (d) these are the algorithms make bench
 * measured fastest or within 2 % of it (docs/benchmarks.md). On (b) the
 * cost model's estimates for packed_segment and prefill_extend are within
 * 1 % of each other and make bench measured them within 5 % (76.3 s and
 * 72.9 s), one first in one run and the other in the next: either is the
 * right choice, within that margin, and nothing else is. */
static void test_benchmark_workloads(void **state)
{
    (void)state;
    assert_int_equal(pick(300, 10, 20, false, 8192), LMS_ALGO_PACKED_SEGMENT); /* (a) */
    const lms_algorithm b = pick(2000, 64, 20, false, 8192);
    assert_true(b == LMS_ALGO_PACKED_SEGMENT || b == LMS_ALGO_PREFILL_EXTEND);   /* (b) */
    assert_int_equal(pick(2000, 500, 20, false, 8192), LMS_ALGO_PREFILL_EXTEND); /* (c) */
    assert_int_equal(pick(100, 10, 500, false, 8192), LMS_ALGO_PACKED_SEGMENT);  /* (d) */
}

static void test_cached_query_prefers_extend(void **state)
{
    (void)state;
    assert_int_equal(pick(300, 10, 20, true, 8192), LMS_ALGO_PREFILL_EXTEND);
}

static void test_single_item_and_guards(void **state)
{
    (void)state;
    /* one item: a single pass either way; never the O(T²) baseline */
    lms_algorithm one = pick(50, 1, 10, false, 8192);
    assert_true(one == LMS_ALGO_PACKED_SEGMENT || one == LMS_ALGO_SERIAL);
    assert_int_not_equal(pick(2000, 64, 20, false, 0), LMS_ALGO_PACKED_DENSE);
    assert_int_not_equal(pick(300, 10, 20, false, 8192), LMS_ALGO_SERIAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_benchmark_workloads),
        cmocka_unit_test(test_cached_query_prefers_extend),
        cmocka_unit_test(test_single_item_and_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
