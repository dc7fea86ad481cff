/*
 * test_model_weights.c — a loaded model's matrices in a tier's formats
 * (compute/model_weights.c), on the demo models (f32, bf16 and Q8_0 GGUFs):
 * the format each (precision, stored type, tier) gets, with its reason;
 * packed matrices accounted and freed, the tied head the embedding's; a
 * stop request honoured while they are made.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_weights.h"

static lms_model *load(const char *name)
{
    const char *dir = getenv("LMSCORE_BUILD_DIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/models/%s", dir ? dir : "build", name);
    lms_model *m;
    lms_error err = {0};
    if (lms_model_load(path, NULL, &m, &err) != LMS_OK) fail_msg("%s: %s", path, err.msg);
    return m;
}

static const compute_tier *tier_named(const char *name)
{
    for (const compute_tier *const *t = compute_tiers; *t; t++)
        if (!strcmp((*t)->name, name)) return *t;
    fail_msg("no tier %s", name);
    return NULL;
}

/* Every matrix of w has format (w->n_layers layers, embedding, head). */
static void expect_format(const model_weights *w, lms_weights_format format, const char *what)
{
    const lms_weights *all[MODEL_WEIGHTS_MAX(64)];
    const int32_t n = model_weights_list(w, all);
    assert_true(n >= 8);
    for (int32_t i = 0; i < n; i++)
        if (all[i]->format != format)
            fail_msg("%s: matrix %d is %s, want %s", what, i,
                     lms_weights_format_name(all[i]->format), lms_weights_format_name(format));
}

/* model_weights.h's table, on a tier with every format (avx2: its code
 * need not run here, the formats are data) and on the generic one. */
static void test_formats_follow_the_precision_and_tier(void **state)
{
    (void)state;
    const struct {
        const char *model, *tier;
        lms_precision precision;
        lms_weights_format format;
        const char *name, *reason;
    } cases[] = {
        {"tiny-qwen3.gguf", "avx2", LMS_PRECISION_AUTO, LMS_WEIGHTS_F32, "f32", "kept as stored"},
        {"tiny-qwen3.gguf", "avx2", LMS_PRECISION_BF16, LMS_WEIGHTS_BF16, "bf16", "bf16 asked"},
        {"tiny-qwen3.gguf", "avx2", LMS_PRECISION_INT8, LMS_WEIGHTS_Q8, "int8", "int8 asked"},
        {"tiny-qwen3-bf16.gguf", "avx2", LMS_PRECISION_AUTO, LMS_WEIGHTS_BF16, "bf16", "(bf16)"},
        {"tiny-qwen3-bf16.gguf", "avx2", LMS_PRECISION_F32, LMS_WEIGHTS_F32, "f32", "f32 asked"},
        {"tiny-qwen3-q8_0.gguf", "avx2", LMS_PRECISION_AUTO, LMS_WEIGHTS_Q8, "int8", "(q8_0)"},
        {"tiny-qwen3-q8_0.gguf", "avx2", LMS_PRECISION_BF16, LMS_WEIGHTS_BF16, "bf16", "q8_0"},
        {"tiny-qwen3-q8_0.gguf", "generic", LMS_PRECISION_AUTO, LMS_WEIGHTS_F32, "f32",
         "the generic tier has no 16-bit or int8 kernels"},
        {"tiny-qwen3-bf16.gguf", "generic", LMS_PRECISION_BF16, LMS_WEIGHTS_F32, "f32",
         "bf16 asked for, but the generic tier"},
        /* f16 keeps its bits in every 16-bit precision, on every tier: held
         * as bf16 it fails bf16's gates (test_precision, docs/engine.md) */
        {"tiny-qwen3-f16.gguf", "avx2", LMS_PRECISION_BF16, LMS_WEIGHTS_F16, "bf16", "f16"},
        {"tiny-qwen3-f16.gguf", "avx512-bf16", LMS_PRECISION_BF16, LMS_WEIGHTS_F16, "bf16", "f16"},
        {"tiny-qwen3-f16.gguf", "amx", LMS_PRECISION_BF16, LMS_WEIGHTS_F16, "bf16", "f16"},
        {"tiny-qwen3-f16.gguf", "avx512-bf16", LMS_PRECISION_BF16X2, LMS_WEIGHTS_F16, "bf16x2",
         "f16"},
        {"tiny-qwen3-f16.gguf", "avx512-bf16", LMS_PRECISION_AUTO, LMS_WEIGHTS_F16, "bf16",
         "(f16)"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lms_model *m = load(cases[c].model);
        model_weights *w;
        lms_error err = {0};
        if (model_weights_create(m, tier_named(cases[c].tier), cases[c].precision, NULL, &w,
                                 &err) != LMS_OK)
            fail_msg("%s: %s", cases[c].model, err.msg);
        char what[160];
        snprintf(what, sizeof what, "%s, %s, %s tier", cases[c].model,
                 lms_precision_name(cases[c].precision), cases[c].tier);
        expect_format(w, cases[c].format, what);
        assert_string_equal(w->precision, cases[c].name);
        if (!strstr(w->precision_reason, cases[c].reason))
            fail_msg("%s: reason '%s' lacks '%s'", what, w->precision_reason, cases[c].reason);
        model_weights_free(w);
        lms_model_free(m);
    }
}

/* bf16 rounds x once but for q, k and the LM head; bf16x2 keeps two
 * values everywhere (docs/engine.md, "Which products keep two values"). */
static void test_bf16_values_per_projection(void **state)
{
    (void)state;
    const struct {
        lms_precision precision;
        int32_t qk, rest, head;
    } cases[] = {{LMS_PRECISION_BF16, 2, 1, 2}, {LMS_PRECISION_BF16X2, 2, 2, 2}};
    lms_model *m = load("tiny-qwen3-bf16.gguf");
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        model_weights *w;
        lms_error err = {0};
        assert_int_equal(
            model_weights_create(m, tier_named("avx512-bf16"), cases[c].precision, NULL, &w, &err),
            LMS_OK);
        for (int32_t l = 0; l < w->n_layers; l++) {
            const layer_weights *lw = &w->layers[l];
            assert_int_equal(lw->wq.x_codes, cases[c].qk);
            assert_int_equal(lw->wk.x_codes, cases[c].qk);
            const lms_weights *rest[] = {&lw->wv, &lw->wo, &lw->w_gate, &lw->w_up, &lw->w_down};
            for (size_t i = 0; i < sizeof rest / sizeof *rest; i++)
                assert_int_equal(rest[i]->x_codes, cases[c].rest);
        }
        assert_int_equal(w->output.x_codes, cases[c].head);
        model_weights_free(w);
    }
    lms_model_free(m);
}

/* Every matrix packed and accounted (its panels' bytes), all freed; the
 * tied head is the embedding. */
static void test_packed_and_accounted(void **state)
{
    (void)state;
    const char *models[] = {"tiny-qwen3.gguf", "tiny-qwen3-bf16.gguf", "tiny-qwen3-q8_0.gguf"};
    for (size_t i = 0; i < sizeof models / sizeof *models; i++) {
        lms_model *m = load(models[i]);
        const size_t before = lms_alloc_current_bytes();
        model_weights *w;
        lms_error err = {0};
        assert_int_equal(
            model_weights_create(m, tier_named("generic"), LMS_PRECISION_AUTO, NULL, &w, &err),
            LMS_OK);
        const lms_weights *all[MODEL_WEIGHTS_MAX(64)];
        size_t bytes = 0;
        for (int32_t k = 0, n = model_weights_list(w, all); k < n; k++) {
            const size_t panels = ((size_t)all[k]->n + LMS_PANEL - 1) / LMS_PANEL;
            bytes += panels * LMS_PANEL * (size_t)all[k]->k * sizeof(float);
        }
        assert_int_equal(lms_alloc_current_bytes() - before, bytes);
        if (m->cfg.tied_embeddings) assert_ptr_equal(w->output.f32, w->tok_embd.f32);
        model_weights_free(w);
        assert_int_equal(lms_alloc_current_bytes(), before);
        lms_model_free(m);
    }
}

/* should_stop: stops from the (limit + 1)-th poll on (never when limit <
 * 0), counting the polls, which come from the conversion's and packing's
 * threads; on_progress: counts the reports, keeps the highest count done
 * and the total and step they named. */
typedef struct {
    atomic_int polls;
    int limit;
    atomic_size_t reports, max_done, total;
    const char *_Atomic what;
} stop_after;

static int stop_after_polls(void *ctx)
{
    stop_after *s = ctx;
    int n = atomic_fetch_add(&s->polls, 1) + 1;
    return s->limit >= 0 && n > s->limit;
}

static void count_progress(void *ctx, const char *what, size_t done, size_t total)
{
    stop_after *s = ctx;
    atomic_fetch_add(&s->reports, 1);
    size_t seen = atomic_load(&s->max_done);
    while (done > seen && !atomic_compare_exchange_weak(&s->max_done, &seen, done)) {
    }
    atomic_store(&s->total, total);
    atomic_store(&s->what, what);
}

/* Packing (bf16 to f32 panels, f32 to Q8) stops when asked, and frees what
 * it made; a load that runs to its end reports each chunk, up to all of
 * them. */
static void test_stops_when_asked(void **state)
{
    (void)state;
    const struct {
        const char *model;
        lms_precision precision;
    } cases[] = {{"tiny-qwen3-bf16.gguf", LMS_PRECISION_F32},
                 {"tiny-qwen3.gguf", LMS_PRECISION_INT8}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        lms_model *m = load(cases[c].model);
        const compute_tier *tier = tier_named("avx2");
        stop_after never = {.limit = -1};
        const lms_stop poll = {
            .should_stop = stop_after_polls, .ctx = &never, .on_progress = count_progress};
        model_weights *w;
        lms_error err = {0};
        assert_int_equal(model_weights_create(m, tier, cases[c].precision, &poll, &w, &err),
                         LMS_OK);
        model_weights_free(w);
        const int chunks = atomic_load(&never.polls);
        assert_true(chunks > 3); /* one poll per chunk of panels */
        assert_int_equal(atomic_load(&never.reports), chunks);
        assert_int_equal(atomic_load(&never.max_done), chunks);
        assert_int_equal(atomic_load(&never.total), chunks);
        assert_string_equal(atomic_load(&never.what), "packing the weights");

        const size_t before = lms_alloc_current_bytes();
        stop_after three = {.limit = 3};
        const lms_stop stop = {.should_stop = stop_after_polls, .ctx = &three};
        w = (model_weights *)1;
        assert_int_equal(model_weights_create(m, tier, cases[c].precision, &stop, &w, &err),
                         LMS_ERR_CANCELLED);
        assert_null(w);
        assert_int_equal(lms_alloc_current_bytes(), before); /* what it made is freed */
        assert_true(atomic_load(&three.polls) < chunks);     /* the rest was skipped */
        print_message("%s as %s: %d chunks; stopped after %d polls (%s)\n", cases[c].model,
                      lms_precision_name(cases[c].precision), chunks, atomic_load(&three.polls),
                      err.msg);
        lms_model_free(m);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats_follow_the_precision_and_tier),
        cmocka_unit_test(test_bf16_values_per_projection),
        cmocka_unit_test(test_packed_and_accounted),
        cmocka_unit_test(test_stops_when_asked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
