/*
 * compare_ggml.c — the block formats against ggml itself: the engine's
 * decoders (engine ggml_blocks.c) and the model maker's quantisers
 * (tools/make_model/quant.c) against the prebuilt libggml-base.so of the
 * pinned npm package @node-llama-cpp/linux-x64 (tests/ggml/npm).
 *
 *   compare_ggml LIBDIR     (the directory holding libggml-base.so)
 *
 * Per type: the block geometry equals ggml's (ggml_type_size,
 * ggml_blck_size); random blocks — every byte random, so scales include
 * subnormals, infinities and NaNs — decode to the same f32 bits as
 * ggml's dequantize_row_* (a NaN only to a NaN: where two NaNs meet in one
 * operation, which payload survives is the compiler's choice of operand
 * order, in ggml's build as in ours), and so do those blocks packed into
 * the engine's int8 compute format (weights_pack.h) and read back
 * (lms_weights_row); and rows of many kinds (scaled
 * normals at magnitudes from 1e-30 to 1e6, zeros, constants, ties, single
 * outliers, one-signed, sparse, subnormal) quantise to exactly the bytes of
 * ggml's quantize_row_*_ref. Prints the counts; exits 1 on any mismatch.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "alloc.h"
#include "ggml_blocks.h"
#include "make_model/mm_quant.h"
#include "weights_pack.h"

#define BLOCKS_PER_TYPE 20000
#define ROWS_PER_KIND   64
#define ROW_ELEMENTS    1024 /* a multiple of every block */
#define MAX_REPORTS     5

typedef void (*dequantize_fn)(const void *blocks, float *out, int64_t n);
typedef void (*quantize_fn)(const float *x, void *blocks, int64_t n);
typedef size_t (*type_size_fn)(int type);
typedef int64_t (*blck_size_fn)(int type);

/* A block type as the engine, the maker and ggml each name it. */
typedef struct {
    lms_dtype engine;
    mm_dtype maker;
    int ggml_type;
    const char *ggml_name; /* the suffix of ggml's dequantize_row_ / quantize_row_*_ref */
} block_type;

static const block_type TYPES[] = {
    {LMS_DTYPE_Q4_0, MM_DTYPE_Q4_0, 2, "q4_0"},  {LMS_DTYPE_Q4_1, MM_DTYPE_Q4_1, 3, "q4_1"},
    {LMS_DTYPE_Q5_0, MM_DTYPE_Q5_0, 6, "q5_0"},  {LMS_DTYPE_Q5_1, MM_DTYPE_Q5_1, 7, "q5_1"},
    {LMS_DTYPE_Q8_0, MM_DTYPE_Q8_0, 8, "q8_0"},  {LMS_DTYPE_Q4_K, MM_DTYPE_Q4_K, 12, "q4_K"},
    {LMS_DTYPE_Q5_K, MM_DTYPE_Q5_K, 13, "q5_K"}, {LMS_DTYPE_Q6_K, MM_DTYPE_Q6_K, 14, "q6_K"},
};
#define N_TYPES (sizeof TYPES / sizeof TYPES[0])

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t next_u64(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform(void)
{
    return (double)(next_u64() >> 11) * 0x1.0p-53;
}

static double normal(void)
{
    double u = uniform(), v = uniform();
    return sqrt(-2.0 * log(u + 0x1.0p-60)) * cos(6.283185307179586 * v);
}

static void *symbol(void *lib, const char *prefix, const char *name, const char *suffix)
{
    char full[64];
    snprintf(full, sizeof full, "%s%s%s", prefix, name, suffix);
    void *p = dlsym(lib, full);
    if (!p) {
        fprintf(stderr, "compare_ggml: %s not found in libggml-base.so\n", full);
        exit(1);
    }
    return p;
}

static bool same_value(float a, float b)
{
    uint32_t x, y;
    memcpy(&x, &a, sizeof x);
    memcpy(&y, &b, sizeof y);
    return x == y || (isnan(a) && isnan(b));
}

static size_t check_geometry(const block_type *t, type_size_fn type_size, blck_size_fn blck_size)
{
    const size_t bytes = type_size(t->ggml_type);
    const int64_t elements = blck_size(t->ggml_type);
    const mm_dtype_info *maker = mm_dtype_about(t->maker);
    if (bytes == lms_dtype_block_bytes(t->engine) &&
        (size_t)elements == lms_dtype_block_elements(t->engine) && bytes == maker->block_bytes &&
        elements == maker->block && (uint32_t)t->ggml_type == maker->ggml_type)
        return 0;
    printf("  %s: ggml has %" PRId64 " elements in %zu bytes; the engine %zu in %zu, the maker "
           "%" PRId64 " in %" PRIu64 " (type id %" PRIu32 ")\n",
           t->ggml_name, elements, bytes, lms_dtype_block_elements(t->engine),
           lms_dtype_block_bytes(t->engine), maker->block, maker->block_bytes, maker->ggml_type);
    return 1;
}

/* The n values of blocks as a matrix of ROW_ELEMENTS columns packed into
 * the int8 compute format and read back, against ggml's values theirs;
 * returns the number that differ. */
static size_t check_packed(const block_type *t, const unsigned char *blocks, size_t n,
                           const float *theirs)
{
    lms_weights w;
    void *buffer;
    lms_error err = {0};
    const int32_t rows = (int32_t)(n / ROW_ELEMENTS);
    float row[ROW_ELEMENTS];
    if (lms_weights_alloc(&w, t->engine, LMS_WEIGHTS_Q8, rows, ROW_ELEMENTS, &buffer, &err) !=
        LMS_OK) {
        fprintf(stderr, "compare_ggml: %s\n", err.msg);
        exit(1);
    }
    const lms_pack_job job = {t->engine, blocks, &w, false};
    if (lms_pack_run(&job, 1, NULL, &err) != LMS_OK) {
        fprintf(stderr, "compare_ggml: %s\n", err.msg);
        exit(1);
    }
    size_t bad = 0;
    for (int32_t r = 0; r < rows; r++) {
        lms_weights_row(&w, r, row);
        for (size_t i = 0; i < ROW_ELEMENTS; i++) {
            const float want = theirs[(size_t)r * ROW_ELEMENTS + i];
            if (same_value(row[i], want)) continue;
            if (bad++ < MAX_REPORTS)
                printf("  %s packed: element %zu is %a, ggml %a\n", t->ggml_name,
                       (size_t)r * ROW_ELEMENTS + i, (double)row[i], (double)want);
        }
    }
    lms_free(buffer);
    return bad;
}

/* Decodes BLOCKS_PER_TYPE random blocks both ways, and packs them; returns
 * the number of values that differ (decoded in *decode_bad, packed in
 * *packed_bad), and counts the NaNs. */
static void check_decode(const block_type *t, dequantize_fn ggml, size_t *nans, size_t *decode_bad,
                         size_t *packed_bad)
{
    const size_t bytes = lms_dtype_block_bytes(t->engine);
    const size_t n = BLOCKS_PER_TYPE * lms_dtype_block_elements(t->engine);
    unsigned char *blocks = malloc(BLOCKS_PER_TYPE * bytes);
    float *ours = malloc(n * sizeof *ours), *theirs = malloc(n * sizeof *theirs);
    if (!blocks || !ours || !theirs) {
        fprintf(stderr, "compare_ggml: out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < BLOCKS_PER_TYPE * bytes; i++)
        blocks[i] = (unsigned char)next_u64();
    lms_ggml_blocks_to_f32(t->engine, blocks, BLOCKS_PER_TYPE, ours);
    ggml(blocks, theirs, (int64_t)n);
    size_t bad = 0;
    *nans = 0;
    for (size_t i = 0; i < n; i++) {
        *nans += isnan(theirs[i]) != 0;
        if (same_value(ours[i], theirs[i])) continue;
        if (bad++ < MAX_REPORTS)
            printf("  %s decode: element %zu is %a, ggml %a\n", t->ggml_name, i, (double)ours[i],
                   (double)theirs[i]);
    }
    *decode_bad = bad;
    *packed_bad = check_packed(t, blocks, n, theirs);
    free(blocks);
    free(ours);
    free(theirs);
}

/* Row kinds for the quantisers: each fills ROW_ELEMENTS values. */
static void fill_row(int kind, int row, float *x)
{
    static const double scales[] = {1e-30, 1e-12, 1e-6, 0.02, 1.0, 3.0, 100.0, 1e6};
    const double scale = scales[row % (sizeof scales / sizeof scales[0])];
    for (int i = 0; i < ROW_ELEMENTS; i++) {
        double v;
        switch (kind) {
        case 0: /* normal */
            v = scale * normal();
            break;
        case 1: /* one-signed: all positive, or all negative */
            v = (row & 1 ? -1 : 1) * scale * fabs(normal());
            break;
        case 2: /* sparse, with blocks of exact zeros */
            v = (next_u64() % 8 == 0) ? scale * normal() : 0.0;
            break;
        case 3: /* constant within 16-element runs */
            v = scale * (double)((i / 16 + row) % 7 - 3);
            break;
        case 4: /* a single outlier in each 32 */
            v = (i % 32 == row % 32) ? scale * 50.0 : scale * normal();
            break;
        case 5: /* small integers: exact ties for every rounding */
            v = (double)((int)(next_u64() % 33) - 16) * 0.5;
            break;
        case 6: /* f32 subnormals and zeros */
            v = (double)((int)(next_u64() % 2001) - 1000) * 0x1.0p-140;
            break;
        default: /* uniform with a shifted mean */
            v = scale * (uniform() + 0.5 * (row % 3));
            break;
        }
        x[i] = (float)v;
    }
}

#define ROW_KINDS 8

/* Quantises ROW_KINDS × ROWS_PER_KIND rows both ways; returns the number
 * of rows whose bytes differ. */
static size_t check_quantize(const block_type *t, quantize_fn ggml)
{
    const size_t row_bytes = mm_dtype_bytes(t->maker, ROW_ELEMENTS);
    float x[ROW_ELEMENTS];
    uint8_t *ours = malloc(row_bytes), *theirs = malloc(row_bytes);
    if (!ours || !theirs) {
        fprintf(stderr, "compare_ggml: out of memory\n");
        exit(1);
    }
    size_t bad = 0;
    for (int kind = 0; kind < ROW_KINDS; kind++) {
        for (int row = 0; row < ROWS_PER_KIND; row++) {
            fill_row(kind, row, x);
            memset(ours, 0xA5, row_bytes);
            memset(theirs, 0x5A, row_bytes);
            mm_quantize_row(t->maker, x, ROW_ELEMENTS, ours);
            ggml(x, theirs, ROW_ELEMENTS);
            if (memcmp(ours, theirs, row_bytes) == 0) continue;
            size_t at = 0;
            while (ours[at] == theirs[at])
                at++;
            if (bad++ < MAX_REPORTS)
                printf("  %s quantize: row kind %d #%d differs from byte %zu (block %zu): "
                       "0x%02x, ggml 0x%02x\n",
                       t->ggml_name, kind, row, at, at / mm_dtype_about(t->maker)->block_bytes,
                       ours[at], theirs[at]);
        }
    }
    free(ours);
    free(theirs);
    return bad;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: compare_ggml LIBDIR\n");
        return 2;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/libggml-base.so", argv[1]);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        fprintf(stderr, "compare_ggml: %s\n", dlerror());
        return 1;
    }
    const type_size_fn type_size = (type_size_fn)symbol(lib, "", "ggml_type_size", "");
    const blck_size_fn blck_size = (blck_size_fn)symbol(lib, "", "ggml_blck_size", "");
    size_t failures = 0;
    for (size_t i = 0; i < N_TYPES; i++) {
        const block_type *t = &TYPES[i];
        const size_t geometry = check_geometry(t, type_size, blck_size);
        size_t nans = 0, decode = 0, packed = 0;
        if (!geometry)
            check_decode(t, (dequantize_fn)symbol(lib, "dequantize_row_", t->ggml_name, ""), &nans,
                         &decode, &packed);
        const size_t quantize = geometry
                                    ? 0
                                    : check_quantize(t, (quantize_fn)symbol(lib, "quantize_row_",
                                                                            t->ggml_name, "_ref"));
        printf("%-5s %d blocks decoded (%zu NaNs): %zu values differ, packed as int8: %zu "
               "differ; %d rows quantised: %zu differ\n",
               t->ggml_name, BLOCKS_PER_TYPE, nans, decode, packed, ROW_KINDS * ROWS_PER_KIND,
               quantize);
        failures += geometry + decode + packed + quantize;
    }
    dlclose(lib);
    return failures ? 1 : 0;
}
