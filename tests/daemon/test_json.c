/*
 * test_json.c — the HTTP API's JSON modules on their own: json_writer
 * (commas, escapes, float32 in the shortest decimal that reads back the
 * same, null for what JSON cannot say) and json_reader (a walk through a
 * document, strings decoded with their escapes and surrogate pairs, the
 * refusals with their reasons and fields: NUL, bad UTF-8, lone surrogates,
 * integers out of range or with a fraction (integral ones, 2.0 and 2e0,
 * are integers), nesting past the limit,
 * trailing text). fuzz_json_request fuzzes both against json-c.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "json_reader.h"
#include "json_writer.h"

static char *written(json_writer *w)
{
    char *text;
    size_t len;
    assert_true(json_writer_done(w, &text, &len));
    assert_int_equal(strlen(text), len);
    return text;
}

static void test_writer_places_commas_and_escapes(void **state)
{
    (void)state;
    json_writer w;
    json_writer_init(&w);
    json_object_open(&w);
    json_key(&w, "a");
    json_array_open(&w);
    json_int(&w, -3);
    json_boolean(&w, true);
    json_null(&w);
    json_array_open(&w);
    json_array_close(&w);
    json_object_open(&w);
    json_object_close(&w);
    json_array_close(&w);
    json_key(&w, "s\"k");
    json_string(&w, "q\"b\\n\n\t\x01\xc3\xa9");
    json_object_close(&w);
    char *text = written(&w);
    assert_string_equal(
        text, "{\"a\":[-3,true,null,[],{}],\"s\\\"k\":\"q\\\"b\\\\n\\n\\t\\u0001\xc3\xa9\"}");
    free(text);
}

static void test_floats_are_the_shortest_that_read_back(void **state)
{
    (void)state;
    json_writer w;
    json_writer_init(&w);
    json_array_open(&w);
    json_float(&w, 0.1f);
    json_float(&w, 1.0f);
    json_float(&w, 1.0f / 3.0f);
    json_float(&w, -2.5e-12f);
    json_float(&w, NAN);
    json_float(&w, -INFINITY);
    json_array_close(&w);
    char *text = written(&w);
    assert_string_equal(text, "[0.1,1,0.33333334,-2.5e-12,null,null]");
    free(text);
    /* every float reads back as itself */
    uint32_t bits = 0x3f800000;
    for (int i = 0; i < 20000; i++, bits = bits * 1664525u + 1013904223u) {
        float v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        json_writer_init(&w);
        json_float(&w, v);
        text = written(&w);
        assert_true(strtof(text, NULL) == v);
        assert_true(strlen(text) <= 16);
        free(text);
    }
}

static void test_reader_walks_a_document(void **state)
{
    (void)state;
    static const char doc[] =
        " {\"n\": [1, -2147483648, 2147483647], \"t\": \"a\\u00e9\\ud83d\\ude00\\n\\/\","
        " \"b\": false, \"x\": {\"deep\": [null, 1.5e3, \"s\"]}, \"a_very_long_member_name_that_"
        "does_not_fit_the_key_buffer_of_sixty_four_bytes\": 0, \"z\": null } ";
    json_reader r;
    json_reader_init(&r, doc, sizeof doc - 1);
    char key[JSON_KEY_MAX];
    int64_t ints[3];
    int n_ints = 0, n_keys = 0;
    bool b = true;
    char text[32];
    size_t len = 0;
    assert_true(json_object_begin(&r, ""));
    while (json_object_next(&r, key)) {
        n_keys++;
        if (strcmp(key, "n") == 0) {
            assert_true(json_array_begin(&r, "n"));
            while (json_array_next(&r))
                assert_true(json_read_int(&r, "n", INT32_MIN, INT32_MAX, &ints[n_ints++]));
        } else if (strcmp(key, "t") == 0) {
            size_t bound;
            assert_true(json_string_bound(&r, "t", &bound));
            assert_true(bound <= sizeof text);
            assert_true(json_read_string(&r, "t", text, &len));
        } else if (strcmp(key, "b") == 0) {
            assert_true(json_read_bool(&r, "b", &b));
        } else if (strcmp(key, "z") == 0) {
            assert_true(json_read_null(&r));
        } else {
            if (n_keys == 5) assert_string_equal(key, ""); /* too long to keep */
            assert_true(json_skip(&r));
        }
    }
    assert_true(json_end(&r));
    assert_false(json_failed(&r));
    assert_int_equal(n_keys, 6);
    assert_int_equal(n_ints, 3);
    assert_true(ints[0] == 1 && ints[1] == INT32_MIN && ints[2] == INT32_MAX);
    assert_string_equal(text, "a\xc3\xa9\xf0\x9f\x98\x80\n/");
    assert_int_equal(len, 9);
    assert_false(b);
}

/* Reads doc's one member "v" as a string (or an int when as_int); the
 * reason and field of the refusal. */
static void refused(const char *doc, bool as_int, const char *reason, const char *field)
{
    json_reader r;
    json_reader_init(&r, doc, strlen(doc));
    char key[JSON_KEY_MAX], text[64];
    int64_t v;
    if (json_object_begin(&r, "") && json_object_next(&r, key)) {
        if (as_int) {
            json_read_int(&r, NULL, INT32_MIN, INT32_MAX, &v);
            json_name_field(&r, "v[%d]", 0);
        } else {
            size_t bound;
            if (json_string_bound(&r, "v", &bound) && bound <= sizeof text)
                json_read_string(&r, "v", text, NULL);
        }
        while (json_object_next(&r, key))
            json_skip(&r);
    }
    json_end(&r);
    assert_true(json_failed(&r));
    assert_string_equal(r.err.reason, reason);
    assert_string_equal(r.err.field, field);
    if (field[0]) assert_non_null(strstr(r.err.msg, field)); /* the message names it */
}

static void test_reader_refusals(void **state)
{
    (void)state;
    refused("{\"v\": \"a\\u0000b\"}", false, "nul_in_text", "v");
    refused("{\"v\": \"a\xff\"}", false, "invalid_utf8", "v");
    refused("{\"v\": \"\xc0\xaf\"}", false, "invalid_utf8", "v");         /* overlong */
    refused("{\"v\": \"\xed\xa0\x80\"}", false, "invalid_utf8", "v");     /* a surrogate */
    refused("{\"v\": \"\xf4\x90\x80\x80\"}", false, "invalid_utf8", "v"); /* over U+10FFFF */
    refused("{\"v\": \"\\ud800\"}", false, "invalid_utf8", "v");
    refused("{\"v\": \"\\udc00\\ud800\"}", false, "invalid_utf8", "v");
    refused("{\"v\": \"a\nb\"}", false, "malformed_request", "v");
    refused("{\"v\": \"\\x\"}", false, "malformed_request", "v");
    refused("{\"v\": \"open", false, "malformed_request", "v");
    refused("{\"v\": 3}", false, "malformed_request", "v");
    refused("{\"v\": 1.5}", true, "malformed_request", "v[0]");
    refused("{\"v\": 1e-2}", true, "malformed_request", "v[0]");
    refused("{\"v\": 25e-1}", true, "malformed_request", "v[0]");
    refused("{\"v\": 2.0000000000000000001}", true, "malformed_request", "v[0]");
    refused("{\"v\": 1e99999999999}", true, "malformed_request", "v[0]");
    refused("{\"v\": 2147483648.0}", true, "malformed_request", "v[0]");
    refused("{\"v\": 1e-99999999999}", true, "malformed_request", "v[0]");
    refused("{\"v\": 2147483648}", true, "malformed_request", "v[0]");
    refused("{\"v\": -99999999999999999999999}", true, "malformed_request", "v[0]");
    refused("{\"v\": 01}", true, "malformed_request", "");
    refused("{\"v\": \"x\"} tail", false, "malformed_request", "");
    refused("{\"v\": \"x\",}", false, "malformed_request", "");
    refused("{\"v\": nul}", true, "malformed_request", "v[0]");
    char deep[200] = "{\"v\": \"x\", \"d\": ";
    for (int i = 0; i < 40; i++)
        strcat(deep, "[");
    refused(deep, false, "malformed_request", "");
}

/* Integral numbers are integers however written, as JSON Schema and the
 * proto3 JSON parsers take them. */
static void test_integral_numbers_are_integers(void **state)
{
    (void)state;
    const struct {
        const char *text;
        int64_t value;
    } cases[] = {{"2.0", 2},
                 {"2e0", 2},
                 {"20e-1", 2},
                 {"0.2e1", 2},
                 {"-3.00", -3},
                 {"1E2", 100},
                 {"1e+2", 100},
                 {"0.0e99", 0},
                 {"-0.0", 0},
                 {"0e-5", 0},
                 {"7.10e1", 71},
                 {"2147483647.0", INT32_MAX},
                 {"-2147483648e0", INT32_MIN},
                 {"21474836.47e2", INT32_MAX},
                 {"0.000001e6", 1},
                 {"100e-2", 1}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        json_reader r;
        json_reader_init(&r, cases[i].text, strlen(cases[i].text));
        int64_t v = 12345;
        assert_true(json_read_int(&r, "n", INT32_MIN, INT32_MAX, &v));
        assert_true(json_end(&r));
        if (v != cases[i].value) fail_msg("%s read as %lld", cases[i].text, (long long)v);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_writer_places_commas_and_escapes),
        cmocka_unit_test(test_floats_are_the_shortest_that_read_back),
        cmocka_unit_test(test_reader_walks_a_document),
        cmocka_unit_test(test_reader_refusals),
        cmocka_unit_test(test_integral_numbers_are_integers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
