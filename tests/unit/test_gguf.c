/*
 * test_gguf.c — the GGUF reader (engine/model/gguf.c): a valid file with every
 * metadata type read back exactly; every getter's type and range rules;
 * truncation at every byte offset; hostile counts, lengths, dimensions,
 * offsets, types and duplicates, each with its precise error.
 *
 * With LMSCORE_FUZZ_SEED_DIR set, also writes the valid files there as
 * seeds for tests/fuzz/corpus/fuzz_gguf/.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf.h"
#include "model_files.h"

static opened open_exact(const void *data, size_t len)
{
    opened o = {.copy = exact_copy(data, len)};
    gguf_file *f = (gguf_file *)1; /* must be reset to NULL on failure */
    o.st = gguf_open_memory(len ? o.copy : NULL, len, &f, &o.err);
    o.f = f;
    return o;
}

static void opened_close(opened *o)
{
    gguf_close(o->f);
    free(o->copy);
}

static gguf_file *open_valid(const mf_buf *b, opened *o)
{
    *o = open_exact(b->data, b->len);
    if (o->st != LMS_OK) fail_msg("valid file rejected: %s", o->err.msg);
    return o->f;
}

/* Expects the bytes to be rejected with status and a message containing
 * needle. */
static void expect_error(const mf_buf *b, lms_status status, const char *needle)
{
    opened o = open_exact(b->data, b->len);
    if (o.st != status || !strstr(o.err.msg, needle))
        fail_msg("expected %s containing \"%s\", got %s: %s", lms_status_name(status), needle,
                 lms_status_name(o.st), o.err.msg);
    assert_null(o.f);
    opened_close(&o);
}

/* Expects a getter call to have failed with LMS_ERR_FORMAT and needle. */
static void expect_getter_error(lms_status st, const lms_error *err, const char *needle)
{
    if (st != LMS_ERR_FORMAT || !strstr(err->msg, needle))
        fail_msg("expected format_error containing \"%s\", got %s: %s", needle, lms_status_name(st),
                 err->msg);
}

static const unsigned char q8_block_rows[2][34] = {{0x00, 0x3c, 1, 2, 3}, {0x00, 0x40, 0xff}};

static void build_valid(mf_buf *out, uint32_t alignment)
{
    gguf_writer w;
    gw_init(&w);
    if (alignment != 32) {
        w.meta.alignment = alignment;
        mf_gguf_u32(&w.meta, "general.alignment", alignment);
    }
    mf_gguf_str(&w.meta, "general.architecture", "llama");
    mf_gguf_key(&w.meta, "t.u8", GGUF_TYPE_UINT8);
    mf_buf_u8(&w.meta.kv, 200);
    mf_gguf_key(&w.meta, "t.i8", GGUF_TYPE_INT8);
    mf_buf_u8(&w.meta.kv, (uint8_t)-5);
    mf_gguf_key(&w.meta, "t.u16", GGUF_TYPE_UINT16);
    mf_buf_u16(&w.meta.kv, 60000);
    mf_gguf_key(&w.meta, "t.i16", GGUF_TYPE_INT16);
    mf_buf_u16(&w.meta.kv, (uint16_t)-300);
    mf_gguf_u32(&w.meta, "t.u32", 4000000000u);
    mf_gguf_key(&w.meta, "t.i32", GGUF_TYPE_INT32);
    mf_buf_u32(&w.meta.kv, (uint32_t)-70000);
    mf_gguf_f32(&w.meta, "t.f32", 0.5f);
    mf_gguf_key(&w.meta, "t.bool", GGUF_TYPE_BOOL);
    mf_buf_u8(&w.meta.kv, 1);
    mf_gguf_str(&w.meta, "t.str", "h\xc3\xa9llo");
    mf_gguf_key(&w.meta, "t.u64", GGUF_TYPE_UINT64);
    mf_buf_u64(&w.meta.kv, 1ull << 40);
    mf_gguf_key(&w.meta, "t.i64", GGUF_TYPE_INT64);
    mf_buf_u64(&w.meta.kv, (uint64_t)INT64_MIN);
    mf_gguf_key(&w.meta, "t.f64", GGUF_TYPE_FLOAT64);
    double eps = 1e-6;
    mf_buf_put(&w.meta.kv, &eps, sizeof eps);
    mf_gguf_key(&w.meta, "t.arr_u32", GGUF_TYPE_ARRAY);
    mf_buf_u32(&w.meta.kv, GGUF_TYPE_UINT32);
    mf_buf_u64(&w.meta.kv, 3);
    for (uint32_t i = 1; i <= 3; i++)
        mf_buf_u32(&w.meta.kv, i * 10);
    const char *strs[] = {"a", "bc", ""};
    mf_gguf_strs(&w.meta, "t.arr_str", strs, 3);
    mf_gguf_key(&w.meta, "t.arr_arr", GGUF_TYPE_ARRAY); /* [[1, 2], ["x"]] */
    mf_buf_u32(&w.meta.kv, GGUF_TYPE_ARRAY);
    mf_buf_u64(&w.meta.kv, 2);
    mf_buf_u32(&w.meta.kv, GGUF_TYPE_UINT8);
    mf_buf_u64(&w.meta.kv, 2);
    mf_buf_u8(&w.meta.kv, 1);
    mf_buf_u8(&w.meta.kv, 2);
    mf_buf_u32(&w.meta.kv, GGUF_TYPE_STRING);
    mf_buf_u64(&w.meta.kv, 1);
    mf_gguf_put_str(&w.meta.kv, "x");
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint16_t b[3] = {0x3c00, 0x4000, 0xc000};
    unsigned char q4k[144] = {0};
    gw_tensor(&w, "a", GGML_TYPE_F32, 2, (uint64_t[]){4, 2}, a, sizeof a);
    gw_tensor(&w, "b", GGML_TYPE_F16, 1, (uint64_t[]){3}, b, sizeof b);
    gw_tensor(&w, "c", GGML_TYPE_Q8_0, 2, (uint64_t[]){32, 2}, q8_block_rows, sizeof q8_block_rows);
    gw_tensor(&w, "d", 12 /* q4_K */, 1, (uint64_t[]){256}, q4k, sizeof q4k);
    gw_finish(&w, out);
    gw_free(&w);
}

/* Fixture: the valid file, opened. */
typedef struct {
    mf_buf bytes;
    opened o;
} valid_fixture;

static int open_valid_fixture(void **state)
{
    valid_fixture *fx = calloc(1, sizeof *fx);
    assert_non_null(fx);
    build_valid(&fx->bytes, 32);
    open_valid(&fx->bytes, &fx->o);
    *state = fx;
    return 0;
}

static int close_valid_fixture(void **state)
{
    valid_fixture *fx = *state;
    opened_close(&fx->o);
    mf_buf_free(&fx->bytes);
    free(fx);
    return 0;
}

static void test_valid_file_reads_back_exactly(void **state)
{
    const gguf_file *f = ((valid_fixture *)*state)->o.f;
    lms_error err = {0};
    assert_int_equal(gguf_version(f), 3);

    uint32_t u32;
    int64_t i64;
    float f32;
    bool flag;
    gguf_str s;
    assert_int_equal(gguf_get_u32(f, "t.u8", &u32, &err), LMS_OK);
    assert_int_equal(u32, 200);
    assert_int_equal(gguf_get_u32(f, "t.u16", &u32, &err), LMS_OK);
    assert_int_equal(u32, 60000);
    assert_int_equal(gguf_get_u32(f, "t.u32", &u32, &err), LMS_OK);
    assert_int_equal(u32, 4000000000u);
    assert_int_equal(gguf_get_i64(f, "t.i8", &i64, &err), LMS_OK);
    assert_int_equal(i64, -5);
    assert_int_equal(gguf_get_i64(f, "t.i16", &i64, &err), LMS_OK);
    assert_int_equal(i64, -300);
    assert_int_equal(gguf_get_i64(f, "t.i32", &i64, &err), LMS_OK);
    assert_int_equal(i64, -70000);
    assert_int_equal(gguf_get_i64(f, "t.u64", &i64, &err), LMS_OK);
    assert_int_equal(i64, 1ll << 40);
    assert_int_equal(gguf_get_i64(f, "t.i64", &i64, &err), LMS_OK);
    assert_true(i64 == INT64_MIN);
    assert_int_equal(gguf_get_f32(f, "t.f32", &f32, &err), LMS_OK);
    assert_true(f32 == 0.5f);
    assert_int_equal(gguf_get_f32(f, "t.f64", &f32, &err), LMS_OK);
    assert_true(f32 == (float)1e-6);
    assert_int_equal(gguf_get_f32(f, "t.u16", &f32, &err), LMS_OK);
    assert_true(f32 == 60000.0f);
    assert_int_equal(gguf_get_bool(f, "t.bool", &flag, &err), LMS_OK);
    assert_true(flag);
    assert_int_equal(gguf_get_str(f, "t.str", &s, &err), LMS_OK);
    assert_int_equal(s.len, 6);
    assert_memory_equal(s.ptr, "h\xc3\xa9llo", 6);

    gguf_value_type et;
    uint64_t n;
    const void *data;
    assert_int_equal(gguf_get_array_info(f, "t.arr_u32", &et, &n, &err), LMS_OK);
    assert_int_equal(et, GGUF_TYPE_UINT32);
    assert_int_equal(n, 3);
    assert_int_equal(gguf_get_array_data(f, "t.arr_u32", &data, &err), LMS_OK);
    uint32_t elems[3];
    memcpy(elems, data, sizeof elems);
    assert_int_equal(elems[0], 10);
    assert_int_equal(elems[2], 30);
    assert_int_equal(gguf_get_array_info(f, "t.arr_str", &et, &n, &err), LMS_OK);
    assert_int_equal(et, GGUF_TYPE_STRING);
    assert_int_equal(n, 3);
    assert_int_equal(gguf_get_array_str(f, "t.arr_str", 1, &s, &err), LMS_OK);
    assert_int_equal(s.len, 2);
    assert_memory_equal(s.ptr, "bc", 2);
    assert_int_equal(gguf_get_array_str(f, "t.arr_str", 2, &s, &err), LMS_OK);
    assert_int_equal(s.len, 0);
    assert_int_equal(gguf_get_array_info(f, "t.arr_arr", &et, &n, &err), LMS_OK);
    assert_int_equal(et, GGUF_TYPE_ARRAY);
    assert_int_equal(n, 2);

    assert_int_equal(gguf_kv_count(f), 16);
    s = gguf_kv_key(f, 0);
    assert_memory_equal(s.ptr, "general.architecture", s.len);
    assert_int_equal(gguf_kv_type(f, 15), GGUF_TYPE_ARRAY);
    assert_true(gguf_has_key(f, "t.f64"));
    assert_false(gguf_has_key(f, "t.f6"));

    assert_int_equal(gguf_tensor_count(f), 4);
    const gguf_tensor *t = gguf_find_tensor(f, "a");
    assert_non_null(t);
    assert_ptr_equal(t, gguf_tensor_at(f, 0));
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->ne[0], 4);
    assert_int_equal(t->ne[1], 2);
    assert_int_equal(t->ne[2], 1);
    assert_int_equal(t->n_elements, 8);
    assert_int_equal(t->n_bytes, 32);
    float a7;
    memcpy(&a7, (const float *)t->data + 7, sizeof a7);
    assert_true(a7 == 8.0f);
    t = gguf_find_tensor(f, "c");
    assert_int_equal(t->n_bytes, 68);
    assert_memory_equal(t->data, q8_block_rows, 68);
    t = gguf_find_tensor(f, "d");
    assert_int_equal(t->type, 12);
    assert_string_equal(gguf_ggml_type_name(t->type), "q4_K");
    assert_int_equal(t->n_bytes, 144);
    assert_null(gguf_find_tensor(f, "e"));
    assert_null(gguf_tensor_at(f, 4));
}

static void test_getters_enforce_type_and_range(void **state)
{
    const gguf_file *f = ((valid_fixture *)*state)->o.f;
    lms_error err = {0};
    uint32_t u32;
    int64_t i64;
    float f32;
    bool flag;
    gguf_str s;
    const void *data;
    expect_getter_error(gguf_get_u32(f, "t.i8", &u32, &err), &err,
                        "'t.i8' = -5 does not fit in u32");
    expect_getter_error(gguf_get_u32(f, "t.u64", &u32, &err), &err,
                        "'t.u64' = 1099511627776 does not fit in u32");
    expect_getter_error(gguf_get_u32(f, "t.str", &u32, &err), &err,
                        "'t.str' has type str, expected an integer");
    expect_getter_error(gguf_get_u32(f, "nope", &u32, &err), &err, "'nope' is missing");
    expect_getter_error(gguf_get_i64(f, "t.f32", &i64, &err), &err, "'t.f32' has type f32");
    expect_getter_error(gguf_get_f32(f, "t.u32", &f32, &err), &err, "f32 exactly");
    expect_getter_error(gguf_get_f32(f, "t.str", &f32, &err), &err, "expected a number");
    expect_getter_error(gguf_get_bool(f, "t.u8", &flag, &err), &err, "has type u8, expected bool");
    expect_getter_error(gguf_get_str(f, "t.arr_str", &s, &err), &err,
                        "has type array, expected str");
    expect_getter_error(gguf_get_array_str(f, "t.arr_str", 3, &s, &err), &err,
                        "index 3 is past its 3 elements");
    expect_getter_error(gguf_get_array_str(f, "t.arr_u32", 0, &s, &err), &err,
                        "array of u32, expected strings");
    expect_getter_error(gguf_get_array_data(f, "t.arr_str", &data, &err), &err,
                        "array of str, not of numbers");
    expect_getter_error(gguf_get_array_data(f, "t.arr_arr", &data, &err), &err,
                        "array of array, not of numbers");
    expect_getter_error(gguf_get_array_info(f, "t.u8", NULL, NULL, &err), &err,
                        "has type u8, expected array");
    /* A NULL lms_error is allowed. */
    assert_int_equal(gguf_get_u32(f, "nope", &u32, NULL), LMS_ERR_FORMAT);
}

static void test_alignment_and_version_2(void **state)
{
    (void)state;
    mf_buf b;
    build_valid(&b, 64);
    opened o;
    gguf_file *f = open_valid(&b, &o);
    for (uint64_t i = 0; i < gguf_tensor_count(f); i++) {
        const unsigned char *d = gguf_tensor_at(f, i)->data;
        assert_int_equal((size_t)(d - o.copy) % 64, 0);
    }
    opened_close(&o);
    b.data[4] = 2; /* version 2 has the same layout */
    f = open_valid(&b, &o);
    assert_int_equal(gguf_version(f), 2);
    opened_close(&o);
    mf_buf_free(&b);
}

static void test_truncation_at_every_offset_fails_cleanly(void **state)
{
    (void)state;
    mf_buf b;
    build_valid(&b, 32);
    for (size_t len = 0; len < b.len; len++) {
        opened o = open_exact(b.data, len);
        if (o.st != LMS_ERR_FORMAT || o.f != NULL || o.err.msg[0] == '\0')
            fail_msg("prefix of %zu bytes: %s %s", len, lms_status_name(o.st), o.err.msg);
        opened_close(&o);
    }
    mf_buf_free(&b);
}

static void header(mf_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    *b = (mf_buf){0};
    mf_buf_put(b, "GGUF", 4);
    mf_buf_u32(b, version);
    mf_buf_u64(b, n_tensors);
    mf_buf_u64(b, n_kv);
}

static void test_bad_headers(void **state)
{
    (void)state;
    mf_buf b;
    header(&b, 3, 0, 0);
    memcpy(b.data, "GGUG", 4);
    expect_error(&b, LMS_ERR_FORMAT, "not a GGUF file");
    b.data[3] = 'F';
    b.data[4] = 1;
    expect_error(&b, LMS_ERR_UNSUPPORTED, "version 1");
    b.data[4] = 4;
    expect_error(&b, LMS_ERR_UNSUPPORTED, "version 4");
    b.data[4] = 0;
    b.data[7] = 3; /* a big-endian v3 */
    expect_error(&b, LMS_ERR_UNSUPPORTED, "big-endian");
    mf_buf_free(&b);
    /* A header that declares nothing is a valid, empty file. */
    header(&b, 3, 0, 0);
    opened o;
    assert_int_equal(gguf_tensor_count(open_valid(&b, &o)), 0);
    opened_close(&o);
    mf_buf_free(&b);
}

static void test_absurd_counts_and_lengths(void **state)
{
    (void)state;
    mf_buf b;
    header(&b, 3, 0, 1ull << 63);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "metadata entries cannot fit");
    mf_buf_free(&b);

    header(&b, 3, 1ull << 63, 0);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "tensor infos cannot fit");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_buf_u64(&b, 1ull << 40); /* key length */
    mf_buf_put(&b, "abcdefgh", 8);
    expect_error(&b, LMS_ERR_FORMAT, "length 1099511627776");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, GGUF_TYPE_STRING);
    mf_buf_u64(&b, 1ull << 40);
    expect_error(&b, LMS_ERR_FORMAT, "string value: length 1099511627776");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, GGUF_TYPE_ARRAY);
    mf_buf_u32(&b, GGUF_TYPE_UINT64);
    mf_buf_u64(&b, 1ull << 61);
    mf_buf_u64(&b, 7);
    expect_error(&b, LMS_ERR_FORMAT, "array of 2305843009213693952 u64");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, GGUF_TYPE_ARRAY);
    mf_buf_u32(&b, GGUF_TYPE_STRING);
    mf_buf_u64(&b, UINT64_MAX);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "strings at offset");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, 13);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "unknown value type 13");
    mf_buf_free(&b);

    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, GGUF_TYPE_ARRAY);
    mf_buf_u32(&b, 77);
    mf_buf_u64(&b, 1);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "unknown array element type 77");
    mf_buf_free(&b);

    /* Arrays of arrays nested 20 deep: bounded, not recursed without end. */
    header(&b, 3, 0, 1);
    mf_gguf_put_str(&b, "k");
    mf_buf_u32(&b, GGUF_TYPE_ARRAY);
    for (int i = 0; i < 20; i++) {
        mf_buf_u32(&b, GGUF_TYPE_ARRAY);
        mf_buf_u64(&b, 1);
    }
    mf_buf_u32(&b, GGUF_TYPE_UINT8);
    mf_buf_u64(&b, 0);
    expect_error(&b, LMS_ERR_FORMAT, "nested deeper than");
    mf_buf_free(&b);
}

/* A file with the given tensor infos (name, n_dims, ne, type, offset) and
 * data_bytes of data after the aligned data section start. */
typedef struct {
    const char *name;
    uint32_t n_dims;
    uint64_t ne[4];
    uint32_t type;
    uint64_t offset;
} raw_tensor;

static void raw_file(mf_buf *b, const raw_tensor *t, size_t n, size_t data_bytes)
{
    header(b, 3, n, 0);
    for (size_t i = 0; i < n; i++) {
        mf_gguf_put_str(b, t[i].name);
        mf_buf_u32(b, t[i].n_dims);
        for (uint32_t d = 0; d < t[i].n_dims; d++)
            mf_buf_u64(b, d < 4 ? t[i].ne[d] : 1);
        mf_buf_u32(b, t[i].type);
        mf_buf_u64(b, t[i].offset);
    }
    mf_buf_pad(b, 32, 0);
    for (size_t i = 0; i < data_bytes; i++)
        mf_buf_u8(b, (uint8_t)i);
}

static void test_bad_tensor_infos(void **state)
{
    (void)state;
    mf_buf b;
    raw_tensor ok = {"w", 2, {4, 2}, GGML_TYPE_F32, 0};
    raw_file(&b, &ok, 1, 32);
    opened o;
    assert_int_equal(gguf_tensor_count(open_valid(&b, &o)), 1);
    opened_close(&o);
    mf_buf_free(&b);

    struct {
        raw_tensor t[2];
        size_t n, data;
        const char *needle;
    } cases[] = {
        {{{"w", 7, {1, 1, 1, 1}, GGML_TYPE_F32, 0}}, 1, 256, "tensor 'w': 7 dimensions"},
        {{{"w", 0, {0}, GGML_TYPE_F32, 0}}, 1, 256, "tensor 'w': 0 dimensions"},
        {{{"w", 2, {1ull << 32, 1ull << 32}, GGML_TYPE_F32, 0}}, 1, 256, "overflows 63 bits"},
        {{{"w", 2, {8, 0}, GGML_TYPE_F32, 0}}, 1, 256, "dimension 1 is 0"},
        {{{"w", 1, {1ull << 62}, 28 /* f64 */, 0}}, 1, 256, "byte size overflows"},
        {{{"w", 1, {8}, 99, 0}}, 1, 256, "unknown ggml type 99"},
        {{{"w", 1, {8}, 4 /* removed q4_2 */, 0}}, 1, 256, "unknown ggml type 4"},
        {{{"w", 1, {33}, GGML_TYPE_Q8_0, 0}},
         1,
         256,
         "row length 33 is not a multiple of q8_0's block of 32"},
        {{{"w", 1, {128}, GGML_TYPE_Q4_K, 0}},
         1,
         256,
         "row length 128 is not a multiple of q4_K's block of 256"},
        {{{"w", 2, {256, 2}, GGML_TYPE_Q6_K, 0}},
         1,
         419,
         "tensor 'w': data [0, +420) lies outside the 419-byte data section"},
        {{{"w", 2, {512, 3}, GGML_TYPE_Q5_1, 0}},
         1,
         1151,
         "tensor 'w': data [0, +1152) lies outside the 1151-byte data section"},
        {{{"w", 1, {8}, GGML_TYPE_F32, 16}},
         1,
         256,
         "offset 16 is not a multiple of the alignment 32"},
        {{{"w", 1, {8}, GGML_TYPE_F32, 0}}, 1, 31, "outside the 31-byte data section"},
        {{{"w", 1, {8}, GGML_TYPE_F32, 1ull << 63}}, 1, 256, "outside the 256-byte data section"},
        {{{"a", 1, {16}, GGML_TYPE_F32, 0}, {"b", 1, {8}, GGML_TYPE_F32, 32}},
         2,
         256,
         "tensors 'a' and 'b' overlap"},
        {{{"a", 1, {8}, GGML_TYPE_F32, 0}, {"a", 1, {8}, GGML_TYPE_F32, 32}},
         2,
         256,
         "tensor 'a': name appears twice"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        raw_file(&b, cases[i].t, cases[i].n, cases[i].data);
        expect_error(&b, LMS_ERR_FORMAT, cases[i].needle);
        mf_buf_free(&b);
    }
}

static void test_bad_metadata(void **state)
{
    (void)state;
    gguf_writer w;
    mf_buf b;
    gw_init(&w);
    mf_gguf_u32(&w.meta, "a.b", 1);
    mf_gguf_str(&w.meta, "x", "y");
    mf_gguf_u32(&w.meta, "a.b", 2);
    gw_finish(&w, &b);
    expect_error(&b, LMS_ERR_FORMAT, "metadata key 'a.b' appears twice");
    gw_free(&w);
    mf_buf_free(&b);

    gw_init(&w);
    mf_gguf_u32(&w.meta, "general.alignment", 24);
    gw_finish(&w, &b);
    expect_error(&b, LMS_ERR_FORMAT, "general.alignment 24 is not a power of two");
    gw_free(&w);
    mf_buf_free(&b);

    gw_init(&w);
    mf_gguf_str(&w.meta, "general.alignment", "32");
    gw_finish(&w, &b);
    expect_error(&b, LMS_ERR_FORMAT, "'general.alignment' has type str");
    gw_free(&w);
    mf_buf_free(&b);
}

static void test_open_from_path(void **state)
{
    (void)state;
    char dir[] = "/tmp/lms_test_gguf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    mf_buf b;
    build_valid(&b, 32);
    write_file(path, b.data, b.len);
    gguf_file *f;
    lms_error err = {0};
    assert_int_equal(gguf_open(path, &f, &err), LMS_OK);
    assert_int_equal(gguf_tensor_count(f), 4);
    gguf_close(f);

    write_file(path, b.data, b.len - 1);
    assert_int_equal(gguf_open(path, &f, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, path));
    write_file(path, "", 0);
    assert_int_equal(gguf_open(path, &f, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "magic"));
    assert_int_equal(gguf_open(dir, &f, &err), LMS_ERR_IO);
    assert_non_null(strstr(err.msg, "not a regular file"));
    unlink(path);
    assert_int_equal(gguf_open(path, &f, &err), LMS_ERR_IO);
    assert_null(f);
    rmdir(dir);
    mf_buf_free(&b);
}

/* Writes the valid files as fuzzing seeds when asked to. */
static void write_fuzz_seeds(const char *dir)
{
    mf_buf b;
    char path[512];
    build_valid(&b, 32);
    snprintf(path, sizeof path, "%s/valid_all_types.gguf", dir);
    write_file(path, b.data, b.len);
    mf_buf_free(&b);
    build_valid(&b, 64);
    snprintf(path, sizeof path, "%s/valid_aligned_64.gguf", dir);
    write_file(path, b.data, b.len);
    mf_buf_free(&b);
}

int main(void)
{
    const char *seed_dir = getenv("LMSCORE_FUZZ_SEED_DIR");
    if (seed_dir) write_fuzz_seeds(seed_dir);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_valid_file_reads_back_exactly, open_valid_fixture,
                                        close_valid_fixture),
        cmocka_unit_test_setup_teardown(test_getters_enforce_type_and_range, open_valid_fixture,
                                        close_valid_fixture),
        cmocka_unit_test(test_alignment_and_version_2),
        cmocka_unit_test(test_truncation_at_every_offset_fails_cleanly),
        cmocka_unit_test(test_bad_headers),
        cmocka_unit_test(test_absurd_counts_and_lengths),
        cmocka_unit_test(test_bad_tensor_infos),
        cmocka_unit_test(test_bad_metadata),
        cmocka_unit_test(test_open_from_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
