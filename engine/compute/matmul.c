/*
 * matmul.c — tiled projections (see matmul.h).
 */
#include "matmul.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>

#include "alloc.h"
#include "half.h"

/* Below this many elements x is quantised on one thread. */
#define QUANTIZE_PARALLEL_MIN 65536

struct matmul_scratch {
    int8_t *codes;
    float *scales;
    int32_t *comp;
    float *sums;
    int16_t *wide;
    uint16_t *bf16;
};

static int32_t ceil_div(int32_t a, int32_t b)
{
    return (a + b - 1) / b;
}

matmul_scratch *matmul_scratch_create(int32_t rows, int32_t max_k)
{
    matmul_scratch *s = calloc(1, sizeof *s);
    if (!s) return NULL;
    const size_t blocks = (size_t)rows * ceil_div(max_k, LMS_Q8_BLOCK);
    s->codes = lms_alloc(blocks * 2 * LMS_Q8_BLOCK);
    s->scales = lms_alloc(blocks * sizeof *s->scales);
    s->comp = lms_alloc(blocks * 2 * sizeof *s->comp);
    s->sums = lms_alloc(blocks * sizeof *s->sums);
    s->wide = lms_alloc(blocks * LMS_Q8_BLOCK * sizeof *s->wide);
    s->bf16 = lms_alloc(2 * (size_t)rows * kernel_bf16_stride(max_k) * sizeof *s->bf16);
    if (!s->codes || !s->scales || !s->comp || !s->sums || !s->wide || !s->bf16) {
        matmul_scratch_free(s);
        return NULL;
    }
    return s;
}

void matmul_scratch_free(matmul_scratch *s)
{
    if (!s) return;
    lms_free(s->codes);
    lms_free(s->scales);
    lms_free(s->comp);
    lms_free(s->sums);
    lms_free(s->wide);
    lms_free(s->bf16);
    free(s);
}

/* The tier's kernels for a Q8 matrix: with one or two codes per activation
 * value. */
static const q8_kernels *q8_kernels_for(const compute_tier *tier, const lms_weights *w)
{
    return w->x_codes == 2 ? tier->kernels->q8x2 : tier->kernels->q8;
}

/* x quantised into s (kernels.h), with the blocks' sums when with_sums. */
static void quantize_rows(const q8_kernels *q8, const float *x, int32_t rows, int32_t k,
                          bool with_sums, matmul_scratch *s, matmul_input *in)
{
    const int32_t blocks = ceil_div(k, LMS_Q8_BLOCK);
#pragma omp parallel for if ((int64_t)rows * k >= QUANTIZE_PARALLEL_MIN)
    for (int32_t r = 0; r < rows; r++) {
        const size_t first = (size_t)r * blocks;
        int8_t *codes = s->codes + first * 2 * LMS_Q8_BLOCK;
        q8->quantize(x + (size_t)r * k, k, blocks, codes, s->scales + first, s->comp + first * 2);
        /* once per row here rather than per panel in the kernel */
        if (q8->wide)
            for (int32_t b = 0; b < blocks; b++)
                for (int32_t j = 0; j < LMS_Q8_BLOCK; j++)
                    s->wide[(first + b) * LMS_Q8_BLOCK + j] =
                        (int16_t)(128 * codes[b * 2 * LMS_Q8_BLOCK + j] +
                                  codes[b * 2 * LMS_Q8_BLOCK + LMS_Q8_BLOCK + j]);
        if (!with_sums) continue;
        /* comp: the half blocks' exact sums (|sum| < 2^24: exact as a float) */
        for (int32_t b = 0; b < blocks; b++)
            s->sums[first + b] = s->scales[first + b] *
                                 (float)(s->comp[(first + b) * 2] + s->comp[(first + b) * 2 + 1]);
    }
    in->codes = s->codes;
    in->scales = s->scales;
    in->comp = s->comp;
    in->sums = s->sums;
    in->wide = q8->wide ? s->wide : NULL;
}

/* x as bf16 hi, and with two values lo, into s (kernels.h's
 * matmul_input.bf16_hi, _lo). */
static void round_rows_bf16(const float *x, int32_t rows, int32_t k, int32_t values,
                            matmul_scratch *s, matmul_input *in)
{
    const int32_t stride = kernel_bf16_stride(k);
    uint16_t *hi = s->bf16, *lo = values == 2 ? s->bf16 + (size_t)rows * stride : NULL;
#pragma omp parallel for if ((int64_t)rows * k >= QUANTIZE_PARALLEL_MIN)
    for (int32_t r = 0; r < rows; r++) {
        const size_t row = (size_t)r * stride;
        for (int32_t kk = 0; kk < k; kk++) {
            const float v = x[(size_t)r * k + kk];
            hi[row + kk] = lms_f32_to_bf16(v);
            /* v - h is exact: h is v rounded to fewer bits */
            const float h = lms_bf16_to_f32(hi[row + kk]);
            if (lo) lo[row + kk] = isfinite(h) ? lms_f32_to_bf16(v - h) : 0;
        }
        for (int32_t kk = k; kk < stride; kk++) {
            hi[row + kk] = 0;
            if (lo) lo[row + kk] = 0;
        }
    }
    in->bf16_hi = hi;
    in->bf16_lo = lo;
}

/* Does the tier multiply w with x rounded to bf16? */
static bool bf16_activations(const compute_tier *tier, const lms_weights *w)
{
    return tier->bf16_activations && w->format == LMS_WEIGHTS_BF16;
}

void matmul_prepare(const matmul_config *cfg, const lms_weights *w, const float *x, int32_t rows,
                    matmul_scratch *s, matmul_input *in)
{
    *in = (matmul_input){.x = x, .rows = rows, .k = w->k};
    if (w->format == LMS_WEIGHTS_Q8)
        quantize_rows(q8_kernels_for(cfg->tier, w), x, rows, w->k, w->offset16, s, in);
    if (bf16_activations(cfg->tier, w)) round_rows_bf16(x, rows, w->k, w->x_codes, s, in);
}

/* F32, F16 and BF16 panels through the tier's f32 or 16-bit kernel. */
static void panels_dense(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                         int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                         kernel_mode mode)
{
    const bool f32 = w->format == LMS_WEIGHTS_F32, bf16 = w->format == LMS_WEIGHTS_BF16;
    const int32_t k = w->k,
                  rows_per_call = f32 ? tier->kernels->f32->rows : tier->kernels->w16->rows;
    for (int32_t c = c0; c < c1; c += LMS_PANEL) {
        const size_t panel = (size_t)(c / LMS_PANEL) * k * LMS_PANEL;
        const int32_t n_cols = c1 - c < LMS_PANEL ? c1 - c : LMS_PANEL;
        for (int32_t r = r0; r < r1; r += rows_per_call) {
            const float *x[KERNEL_MAX_ROWS];
            for (int32_t i = 0; i < rows_per_call; i++)
                x[i] = in->x + (size_t)(r + i < r1 ? r + i : r1 - 1) * k;
            const int32_t n_rows = r1 - r < rows_per_call ? r1 - r : rows_per_call;
            float *yr = y + (size_t)(r - r0) * ldy + (c - c0);
            if (f32)
                tier->kernels->f32->fn(x, k, w->f32 + panel, LMS_PANEL, yr, ldy, n_rows, n_cols,
                                       mode);
            else
                tier->kernels->w16->fn(x, k, w->w16 + panel, bf16, yr, ldy, n_rows, n_cols, mode);
        }
    }
}

/* Panel c (a multiple of LMS_PANEL) of a Q8 matrix. */
static q8_panel q8_panel_at(const lms_weights *w, int32_t c)
{
    const int32_t blocks = lms_weights_blocks(w), halves = w->layout.halves;
    const size_t p = (size_t)(c / LMS_PANEL), pb = p * blocks;
    const size_t pg = p * (size_t)lms_weights_groups(w);
    return (q8_panel){
        .codes = w->q8 + pb * LMS_Q8_BLOCK * LMS_PANEL,
        .scale = w->scale16 + pg * LMS_PANEL,
        .offset = w->offset16 ? w->offset16 + pg * LMS_PANEL : NULL,
        .sub_scale = w->sub_scale ? w->sub_scale + pb * (size_t)halves * LMS_PANEL : NULL,
        .sub_offset = w->sub_offset ? w->sub_offset + pb * LMS_PANEL : NULL,
        .group_blocks = w->layout.group_blocks,
        .halves = halves,
        .bias = w->layout.bias,
    };
}

/* x's rows [r, r + rows) as q8_act_rows, rows past r1 repeating r1 - 1. */
static void q8_rows_at(const matmul_input *in, int32_t blocks, int32_t r, int32_t r1, int32_t rows,
                       q8_act_row *x)
{
    for (int32_t i = 0; i < rows; i++) {
        const size_t row = (size_t)(r + i < r1 ? r + i : r1 - 1);
        x[i] = (q8_act_row){in->codes + row * blocks * 2 * LMS_Q8_BLOCK, in->scales + row * blocks,
                            in->comp + row * blocks * 2, in->sums + row * blocks,
                            in->wide ? in->wide + row * blocks * LMS_Q8_BLOCK : NULL};
    }
}

/* A tile whose panels' codes take at most this many bytes loops its
 * groups of rows outside and its panels inside: a group's codes stay in L1
 * while the panels come from L2 (half of Zen 4's 1 MB); 5% faster at the
 * 0.6B shapes (K = 1024, 512 columns) than panels outside, whose rows'
 * codes come from L2 in 12 streams. A larger tile keeps the panels outside,
 * each in L1/L2 while the rows stream past it: its panels would come from
 * L3 once per group. */
#define Q8_ROWS_OUTSIDE_BYTES (512 * 1024)

static void panels_q8(const q8_kernels *kernels, const lms_weights *w, const matmul_input *in,
                      int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                      kernel_mode mode)
{
    const int32_t blocks = lms_weights_blocks(w), rows_per_call = kernels->rows;
    const int32_t panels = (c1 - c0 + LMS_PANEL - 1) / LMS_PANEL;
    q8_act_row x[KERNEL_MAX_ROWS];
    if ((int64_t)panels * blocks * LMS_Q8_BLOCK * LMS_PANEL <= Q8_ROWS_OUTSIDE_BYTES) {
        for (int32_t r = r0; r < r1; r += rows_per_call) {
            q8_rows_at(in, blocks, r, r1, rows_per_call, x);
            const int32_t n_rows = r1 - r < rows_per_call ? r1 - r : rows_per_call;
            for (int32_t c = c0; c < c1; c += LMS_PANEL) {
                const q8_panel panel = q8_panel_at(w, c);
                const int32_t n_cols = c1 - c < LMS_PANEL ? c1 - c : LMS_PANEL;
                kernels->fn(x, blocks, &panel, y + (size_t)(r - r0) * ldy + (c - c0), ldy, n_rows,
                            n_cols, mode);
            }
        }
        return;
    }
    for (int32_t c = c0; c < c1; c += LMS_PANEL) {
        const q8_panel panel = q8_panel_at(w, c);
        const int32_t n_cols = c1 - c < LMS_PANEL ? c1 - c : LMS_PANEL;
        for (int32_t r = r0; r < r1; r += rows_per_call) {
            q8_rows_at(in, blocks, r, r1, rows_per_call, x);
            const int32_t n_rows = r1 - r < rows_per_call ? r1 - r : rows_per_call;
            kernels->fn(x, blocks, &panel, y + (size_t)(r - r0) * ldy + (c - c0), ldy, n_rows,
                        n_cols, mode);
        }
    }
}

void matmul_panels(const compute_tier *tier, const lms_weights *w, const matmul_input *in,
                   int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                   kernel_mode mode)
{
    if (w->format == LMS_WEIGHTS_Q8)
        panels_q8(q8_kernels_for(tier, w), w, in, r0, r1, c0, c1, y, ldy, mode);
    else
        panels_dense(tier, w, in, r0, r1, c0, c1, y, ldy, mode);
}

void matmul_block(const matmul_config *cfg, const lms_weights *w, const matmul_input *in,
                  int32_t r0, int32_t r1, int32_t c0, int32_t c1, float *y, size_t ldy,
                  kernel_mode mode)
{
    cfg->tier->block(cfg->tier, w, in, r0, r1, c0, c1, y, ldy, mode);
}

/* The grid of a matmul_many call: tiles of row_tile rows × col_tile
 * columns of every product. Tiles start at MAX_ROW_TILE × MATMUL_COL_TILE
 * and are halved, rows first (down to MIN_ROW_TILE), then columns (down to
 * one panel), until the products make TILES_PER_THREAD tiles per thread:
 * enough for the dynamic schedule to keep every thread busy to the end. A
 * row's result does not depend on the tile it falls in (kernels.h), so
 * the grid can follow the thread count. Row tiles are multiples of every
 * tier's rows per call. */
#define MAX_ROW_TILE     384
#define MIN_ROW_TILE     48
#define ROW_TILE_STEP    24
#define TILES_PER_THREAD 4

typedef struct {
    int32_t row_tile, col_tile;
} grid;

static int64_t grid_tiles(const grid *g, const matmul_product *p, int n, int32_t rows)
{
    int64_t tiles = 0;
    for (int i = 0; i < n; i++)
        tiles += (int64_t)ceil_div(rows, g->row_tile) * ceil_div(p[i].w->n, g->col_tile);
    return tiles;
}

static grid grid_for(const matmul_product *p, int n, int32_t rows, int threads)
{
    grid g = {MAX_ROW_TILE, MATMUL_COL_TILE};
    const int64_t want = (int64_t)TILES_PER_THREAD * threads;
    while (grid_tiles(&g, p, n, rows) < want) {
        if (g.row_tile > MIN_ROW_TILE && g.row_tile < rows)
            g.row_tile = ceil_div(g.row_tile / 2, ROW_TILE_STEP) * ROW_TILE_STEP;
        else if (g.col_tile > LMS_PANEL)
            g.col_tile /= 2;
        else
            break;
    }
    return g;
}

void matmul_many(const matmul_config *cfg, const matmul_product *p, int n, const float *x,
                 int32_t rows, matmul_scratch *s)
{
    const int32_t k = p[0].w->k;
    matmul_input in = {.x = x, .rows = rows, .k = k};
    /* the Q8 matrices share x's quantisation, the BF16 ones its rounding
     * (matmul.h) */
    const lms_weights *q8 = NULL, *bf16 = NULL;
    bool sums = false;
    for (int i = 0; i < n; i++) {
        /* one rounding serves every BF16 product: with lo where one wants it */
        if (bf16_activations(cfg->tier, p[i].w) && (!bf16 || p[i].w->x_codes > bf16->x_codes))
            bf16 = p[i].w;
        if (p[i].w->format != LMS_WEIGHTS_Q8) continue;
        q8 = p[i].w;
        sums |= p[i].w->offset16 != NULL;
    }
    if (q8) quantize_rows(q8_kernels_for(cfg->tier, q8), x, rows, k, sums, s, &in);
    if (bf16) round_rows_bf16(x, rows, k, bf16->x_codes, s, &in);
    const grid g = grid_for(p, n, rows, omp_get_max_threads());
    const int32_t row_tiles = ceil_div(rows, g.row_tile);
    int64_t first_tile[MATMUL_MAX_PRODUCTS + 1] = {0};
    for (int i = 0; i < n; i++)
        first_tile[i + 1] = first_tile[i] + (int64_t)row_tiles * ceil_div(p[i].w->n, g.col_tile);
#pragma omp parallel for schedule(dynamic, 1) if (first_tile[n] > 1)
    for (int64_t t = 0; t < first_tile[n]; t++) {
        int i = 0;
        while (t >= first_tile[i + 1])
            i++;
        const lms_weights *w = p[i].w;
        const int32_t n_cols = w->n, col_tiles = ceil_div(n_cols, g.col_tile);
        const int64_t tile = t - first_tile[i];
        const int32_t r0 = (int32_t)(tile / col_tiles) * g.row_tile;
        const int32_t c0 = (int32_t)(tile % col_tiles) * g.col_tile;
        const int32_t r1 = rows - r0 < g.row_tile ? rows : r0 + g.row_tile;
        const int32_t c1 = n_cols - c0 < g.col_tile ? n_cols : c0 + g.col_tile;
        matmul_block(cfg, w, &in, r0, r1, c0, c1, p[i].y + (size_t)r0 * n_cols + c0, (size_t)n_cols,
                     p[i].mode);
    }
}

void matmul(const matmul_config *cfg, const lms_weights *w, const float *x, int32_t rows,
            kernel_mode mode, float *y, matmul_scratch *s)
{
    const matmul_product p = {w, y, mode};
    matmul_many(cfg, &p, 1, x, rows, s);
}
