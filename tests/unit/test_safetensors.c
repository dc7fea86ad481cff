/*
 * test_safetensors.c — the safetensors reader (engine/model/safetensors.c): a
 * valid file read back exactly; truncation at every byte offset; bad header
 * lengths, bad JSON, bad dtypes, shapes and offsets, overlaps and
 * duplicates, each with its precise error.
 *
 * With LMSCORE_FUZZ_SEED_DIR set, also writes the valid file there as a
 * seed for tests/fuzz/corpus/fuzz_safetensors/.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <unistd.h>

#include "safetensors.h"
#include "model_files.h"

static opened open_exact(const void *data, size_t len)
{
    opened o = {.copy = exact_copy(data, len)};
    safetensors_file *f = (safetensors_file *)1; /* must be reset to NULL on failure */
    o.st = safetensors_open_memory(len ? o.copy : NULL, len, &f, &o.err);
    o.f = f;
    return o;
}

static void opened_close(opened *o)
{
    safetensors_close(o->f);
    free(o->copy);
}

static void expect_error(const void *data, size_t len, const char *needle)
{
    opened o = open_exact(data, len);
    if (o.st != LMS_ERR_FORMAT || !strstr(o.err.msg, needle))
        fail_msg("expected format_error containing \"%s\", got %s: %s", needle,
                 lms_status_name(o.st), o.err.msg);
    assert_null(o.f);
    opened_close(&o);
}

/* A file whose header is exactly the given JSON, followed by data_len
 * bytes. */
static void expect_header_error(const char *json, size_t data_len, const char *needle)
{
    mf_buf b = {0};
    mf_buf_u64(&b, strlen(json));
    mf_buf_put(&b, json, strlen(json));
    for (size_t i = 0; i < data_len; i++)
        mf_buf_u8(&b, (uint8_t)i);
    expect_error(b.data, b.len, needle);
    mf_buf_free(&b);
}

static const float weights[6] = {1, -2, 3.5f, 0, 1e-3f, -7};

static void build_valid(mf_buf *out)
{
    static st_writer w;
    uint16_t halves[4] = {0x3c00, 0xc000, 0x0001, 0x7c00};
    int64_t ids[2] = {-1, 1ll << 40};
    sw_tensor(&w, "model.w", "F32", 2, (uint64_t[]){2, 3}, weights, sizeof weights);
    sw_tensor(&w, "model.h", "F16", 1, (uint64_t[]){4}, halves, sizeof halves);
    sw_tensor(&w, "model.b", "BF16", 3, (uint64_t[]){1, 2, 2}, halves, sizeof halves);
    sw_tensor(&w, "ids", "I64", 1, (uint64_t[]){2}, ids, sizeof ids);
    sw_tensor(&w, "scalar", "U8", 0, NULL, "\x07", 1);
    sw_tensor(&w, "empty", "F32", 2, (uint64_t[]){0, 5}, NULL, 0);
    sw_finish(&w, out);
    sw_free(&w);
}

static void test_valid_file_reads_back_exactly(void **state)
{
    (void)state;
    mf_buf b;
    build_valid(&b);
    opened o = open_exact(b.data, b.len);
    assert_int_equal(o.st, LMS_OK);
    assert_int_equal(safetensors_tensor_count(o.f), 6);
    const safetensors_tensor *t = safetensors_find_tensor(o.f, "model.w");
    assert_non_null(t);
    assert_ptr_equal(t, safetensors_tensor_at(o.f, 0));
    assert_string_equal(t->name, "model.w");
    assert_int_equal(t->dtype, SAFETENSORS_F32);
    assert_string_equal(t->dtype_name, "F32");
    assert_int_equal(t->n_dims, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    assert_int_equal(t->n_elements, 6);
    assert_int_equal(t->n_bytes, 24);
    assert_memory_equal(t->data, weights, sizeof weights);
    t = safetensors_find_tensor(o.f, "model.b");
    assert_int_equal(t->dtype, SAFETENSORS_BF16);
    assert_int_equal(t->n_dims, 3);
    assert_int_equal(t->n_elements, 4);
    t = safetensors_find_tensor(o.f, "ids");
    assert_int_equal(t->dtype, SAFETENSORS_I64);
    assert_int_equal(t->n_bytes, 16);
    t = safetensors_find_tensor(o.f, "scalar");
    assert_int_equal(t->n_dims, 0);
    assert_int_equal(t->n_elements, 1);
    assert_int_equal(*(const unsigned char *)t->data, 7);
    t = safetensors_find_tensor(o.f, "empty");
    assert_int_equal(t->n_elements, 0);
    assert_int_equal(t->n_bytes, 0);
    assert_null(safetensors_find_tensor(o.f, "__metadata__"));
    assert_null(safetensors_find_tensor(o.f, "model"));
    assert_null(safetensors_tensor_at(o.f, 6));
    opened_close(&o);
    mf_buf_free(&b);
}

static void test_truncation_at_every_offset_fails_cleanly(void **state)
{
    (void)state;
    mf_buf b;
    build_valid(&b);
    for (size_t len = 0; len < b.len; len++) {
        opened o = open_exact(b.data, len);
        if (o.st != LMS_ERR_FORMAT || o.f != NULL || o.err.msg[0] == '\0')
            fail_msg("prefix of %zu bytes: %s %s", len, lms_status_name(o.st), o.err.msg);
        opened_close(&o);
    }
    mf_buf_free(&b);
}

static void test_bad_header_length(void **state)
{
    (void)state;
    expect_error("\x02\0\0\0", 4, "too short for the header length");
    mf_buf b = {0};
    mf_buf_u64(&b, 1ull << 63);
    mf_buf_put(&b, "{}", 2);
    expect_error(b.data, b.len, "header length 9223372036854775808 exceeds the 2 bytes");
    mf_buf_free(&b);
    mf_buf_u64(&b, 1);
    mf_buf_put(&b, "{", 1);
    expect_error(b.data, b.len, "header length 1 is outside 2..");
    mf_buf_free(&b);
    expect_header_error("{\"a\":", 0, "header JSON: unexpected end");
    expect_header_error("[1, 2]  ", 0, "header JSON is not an object");
    expect_header_error("{} x", 0, "unexpected byte 0x78 at 3 after the object");
    mf_buf_u64(&b, 4);
    mf_buf_put(&b, "{}\0 ", 4); /* a NUL is not padding */
    expect_error(b.data, b.len, "unexpected byte 0x00 at 2 after the object");
    mf_buf_free(&b);
    expect_header_error("nonsense", 0, "header JSON");
}

static void test_bad_tensor_entries(void **state)
{
    (void)state;
    struct {
        const char *json;
        size_t data;
        const char *needle;
    } cases[] = {
        {"{\"w\":1}", 0, "tensor 'w': its entry is not a JSON object"},
        {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "\"dtype\" is missing"},
        {"{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
         "unknown dtype \"F33\""},
        {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "\"shape\" is missing"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4,
         "shape[0] is not a non-negative integer"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1.5],\"data_offsets\":[0,4]}}", 4,
         "shape[0] is not"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
         "9 dimensions"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,4]}}", 4,
         "element count overflows"},
        {"{\"w\":{\"dtype\":\"F64\",\"shape\":[4611686018427387904],\"data_offsets\":[0,4]}}", 4,
         "need"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "\"data_offsets\" is not [begin, end]"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4,
         "\"data_offsets\" is not"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4,
         "\"data_offsets\" is not"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4,
         "data_offsets [4, 0] outside the 4-byte"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 3,
         "outside the 3-byte data section"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,18446744073709551615]}}", 8,
         "outside"},
        {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 8,
         "2 elements of F32 need 8 bytes, data_offsets span 4"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
         8, "tensors 'a' and 'b' overlap"},
        {"{\"__metadata__\":[1]}", 0, "__metadata__ is not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_header_error(cases[i].json, cases[i].data, cases[i].needle);
}

static void test_open_from_path(void **state)
{
    (void)state;
    char dir[] = "/tmp/lms_test_st_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    mf_buf b;
    build_valid(&b);
    write_file(path, b.data, b.len);
    safetensors_file *f;
    lms_error err = {0};
    assert_int_equal(safetensors_open(path, &f, &err), LMS_OK);
    assert_int_equal(safetensors_tensor_count(f), 6);
    safetensors_close(f);
    write_file(path, b.data, b.len - 1);
    assert_int_equal(safetensors_open(path, &f, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, path));
    assert_null(f);
    unlink(path);
    assert_int_equal(safetensors_open(path, &f, &err), LMS_ERR_IO);
    rmdir(dir);
    mf_buf_free(&b);
}

int main(void)
{
    const char *seed_dir = getenv("LMSCORE_FUZZ_SEED_DIR");
    if (seed_dir) {
        mf_buf b;
        char path[512];
        build_valid(&b);
        snprintf(path, sizeof path, "%s/valid_mixed.safetensors", seed_dir);
        write_file(path, b.data, b.len);
        mf_buf_free(&b);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_file_reads_back_exactly),
        cmocka_unit_test(test_truncation_at_every_offset_fails_cleanly),
        cmocka_unit_test(test_bad_header_length),
        cmocka_unit_test(test_bad_tensor_entries),
        cmocka_unit_test(test_open_from_path),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
