/*
 * weights_pack.c — packing stored tensors (see weights_pack.h).
 */
#include "weights_pack.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "ggml_blocks.h"
#include "half.h"
#include "progress.h"

/* Panels per parallel task. */
#define CHUNK_PANELS 4

bool lms_pack_supported(lms_dtype type, lms_weights_format format)
{
    switch (format) {
    case LMS_WEIGHTS_F16:
        return type == LMS_DTYPE_F16;
    case LMS_WEIGHTS_BF16:
        return true;
    case LMS_WEIGHTS_F32:
    case LMS_WEIGHTS_Q8:
        return true;
    }
    return false;
}

/* The Q8 arrays a matrix stored as type needs to keep its numbers
 * (weights.h). */
static lms_q8_layout q8_layout(lms_dtype type)
{
    switch (type) {
    case LMS_DTYPE_Q4_0:
        return (lms_q8_layout){.group_blocks = 1, .bias = 8};
    case LMS_DTYPE_Q5_0:
        return (lms_q8_layout){.group_blocks = 1, .bias = 16};
    case LMS_DTYPE_Q4_1:
    case LMS_DTYPE_Q5_1:
        return (lms_q8_layout){.group_blocks = 1, .offsets = true};
    case LMS_DTYPE_Q4_K:
    case LMS_DTYPE_Q5_K:
        return (lms_q8_layout){
            .group_blocks = 8, .halves = 1, .offsets = true, .sub_offsets = true};
    case LMS_DTYPE_Q6_K:
        return (lms_q8_layout){.group_blocks = 8, .halves = 2, .bias = LMS_Q8_SMALL_BIAS};
    default:
        return (lms_q8_layout){.group_blocks = 1, .bias = 128};
    }
}

lms_status lms_weights_alloc(lms_weights *w, lms_dtype type, lms_weights_format format, int32_t n,
                             int32_t k, void **buffer, lms_error *err)
{
    *buffer = NULL;
    memset(w, 0, sizeof *w);
    w->format = format;
    w->n = n;
    w->k = k;
    w->layout = q8_layout(type);
    w->x_codes = 1;
    size_t bytes = lms_weights_bytes(w);
    unsigned char *data = lms_alloc(bytes);
    if (!data)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL,
                        "no memory for a %d x %d %s matrix (%zu bytes)", n, k,
                        lms_weights_format_name(format), bytes);
    *buffer = data;
    lms_advise_huge_pages(data, bytes);
    if (format == LMS_WEIGHTS_F32) {
        w->f32 = (const float *)data;
        return LMS_OK;
    }
    if (format != LMS_WEIGHTS_Q8) {
        w->w16 = (const uint16_t *)data;
        return LMS_OK;
    }
    size_t parts[LMS_Q8_PARTS], at[LMS_Q8_PARTS], used = 0;
    lms_weights_q8_parts(w, parts);
    for (int i = 0; i < LMS_Q8_PARTS; i++) {
        at[i] = used;
        used += parts[i];
    }
    w->q8 = data;
    w->scale16 = (const uint16_t *)(data + at[1]);
    w->offset16 = parts[2] ? (const uint16_t *)(data + at[2]) : NULL;
    w->sub_scale = parts[3] ? (const int8_t *)(data + at[3]) : NULL;
    w->sub_offset = parts[4] ? (const int8_t *)(data + at[4]) : NULL;
    return LMS_OK;
}

static size_t source_row_bytes(lms_dtype type, int32_t k)
{
    return (size_t)k / lms_dtype_block_elements(type) * lms_dtype_block_bytes(type);
}

/* Row r of the stored tensor as f32 values. */
static void source_row_f32(lms_dtype type, const unsigned char *row, int32_t k, float *out)
{
    switch (type) {
    case LMS_DTYPE_F32:
        memcpy(out, row, (size_t)k * sizeof *out);
        return;
    case LMS_DTYPE_F16:
        for (int32_t i = 0; i < k; i++)
            out[i] = lms_f16_to_f32(lms_load_u16(row + 2 * (size_t)i));
        return;
    case LMS_DTYPE_BF16:
        for (int32_t i = 0; i < k; i++)
            out[i] = lms_bf16_to_f32(lms_load_u16(row + 2 * (size_t)i));
        return;
    default:
        lms_ggml_blocks_to_f32(type, row, (size_t)k / lms_dtype_block_elements(type), out);
        return;
    }
}

/* One panel of F32: column j of the panel is row 32p + j. */
static void pack_f32_panel(const lms_pack_job *job, int32_t p, float *tmp)
{
    const lms_weights *w = job->dst;
    float *panel = (float *)w->f32 + (size_t)p * w->k * LMS_PANEL;
    for (int32_t j = 0; j < LMS_PANEL; j++) {
        const int32_t r = p * LMS_PANEL + j;
        if (r < w->n)
            source_row_f32(job->type,
                           (const unsigned char *)job->src +
                               (size_t)r * source_row_bytes(job->type, w->k),
                           w->k, tmp);
        for (int32_t kk = 0; kk < w->k; kk++)
            panel[(size_t)kk * LMS_PANEL + j] = r < w->n ? tmp[kk] : 0.0f;
    }
}

/* One panel of a 16-bit format: column j of the panel is row 32p + j, at
 * the places the matrix's order gives (weights.h). */
static void pack_w16_panel(const lms_pack_job *job, int32_t p, float *tmp)
{
    const lms_weights *w = job->dst;
    uint16_t *panel = (uint16_t *)w->w16 + (size_t)p * w->k * LMS_PANEL;
    const bool same = (job->type == LMS_DTYPE_F16 && w->format == LMS_WEIGHTS_F16) ||
                      (job->type == LMS_DTYPE_BF16 && w->format == LMS_WEIGHTS_BF16);
    for (int32_t j = 0; j < LMS_PANEL; j++) {
        const int32_t r = p * LMS_PANEL + j;
        if (r >= w->n) {
            for (int32_t kk = 0; kk < w->k; kk++)
                panel[lms_weights_w16_at(w, kk, j)] = 0;
            continue;
        }
        const unsigned char *row =
            (const unsigned char *)job->src + (size_t)r * source_row_bytes(job->type, w->k);
        if (same) {
            for (int32_t kk = 0; kk < w->k; kk++)
                panel[lms_weights_w16_at(w, kk, j)] = lms_load_u16(row + 2 * (size_t)kk);
            continue;
        }
        source_row_f32(job->type, row, w->k, tmp);
        for (int32_t kk = 0; kk < w->k; kk++)
            panel[lms_weights_w16_at(w, kk, j)] = lms_f32_to_bf16(tmp[kk]);
    }
}

/* ggml's quantize_row_q8_0_ref for one block of 32 values. Finite values
 * give codes in [-127, 127]; a NaN or infinite product (a NaN weight, an
 * infinite block) gives 0 where ggml's cast would be undefined. */
static uint16_t quantize_block(const float *x, int8_t *codes)
{
    float amax = 0.0f;
    for (int i = 0; i < LMS_Q8_BLOCK; i++)
        amax = fmaxf(amax, fabsf(x[i]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < LMS_Q8_BLOCK; i++) {
        const float q = roundf(x[i] * id);
        codes[i] = q >= -128.0f && q <= 127.0f ? (int8_t)q : 0;
    }
    return lms_f32_to_f16(d);
}

/* Block b of column j of panel p gets codes. */
static void put_codes(const lms_weights *w, size_t p, size_t j, size_t b, const int8_t *codes)
{
    uint8_t *dst =
        (uint8_t *)w->q8 + (p * (size_t)lms_weights_blocks(w) + b) * LMS_Q8_BLOCK * LMS_PANEL;
    for (int i = 0; i < LMS_Q8_BLOCK; i++)
        dst[(i / 4) * LMS_PANEL * 4 + j * 4 + i % 4] = (uint8_t)(codes[i] + w->layout.bias);
}

/* Column j of panel p (a row past n): zeros. */
static void pack_q8_zeros(const lms_weights *w, size_t p, size_t j)
{
    const size_t blocks = (size_t)lms_weights_blocks(w), groups = (size_t)lms_weights_groups(w);
    const size_t halves = (size_t)w->layout.halves;
    const int8_t zeros[LMS_Q8_BLOCK] = {0};
    for (size_t b = 0; b < blocks; b++) {
        put_codes(w, p, j, b, zeros);
        for (size_t h = 0; h < halves; h++)
            ((int8_t *)w->sub_scale)[((p * blocks + b) * halves + h) * LMS_PANEL + j] = 0;
        if (w->sub_offset) ((int8_t *)w->sub_offset)[(p * blocks + b) * LMS_PANEL + j] = 0;
    }
    for (size_t g = 0; g < groups; g++) {
        ((uint16_t *)w->scale16)[(p * groups + g) * LMS_PANEL + j] = 0;
        if (w->offset16) ((uint16_t *)w->offset16)[(p * groups + g) * LMS_PANEL + j] = 0;
    }
}

/* Column j of panel p from a row of float type: ggml's Q8_0 of each block
 * (tmp: room for the row's padded blocks). */
static void pack_q8_floats(const lms_pack_job *job, size_t p, size_t j, const unsigned char *row,
                           float *tmp)
{
    const lms_weights *w = job->dst;
    const int32_t blocks = lms_weights_blocks(w);
    memset(tmp, 0, (size_t)blocks * LMS_Q8_BLOCK * sizeof *tmp);
    source_row_f32(job->type, row, w->k, tmp);
    for (int32_t b = 0; b < blocks; b++) {
        int8_t codes[LMS_Q8_BLOCK];
        ((uint16_t *)w->scale16)[(p * (size_t)blocks + (size_t)b) * LMS_PANEL + j] =
            quantize_block(tmp + (size_t)b * LMS_Q8_BLOCK, codes);
        put_codes(w, p, j, (size_t)b, codes);
    }
}

/* Column j of panel p from a row of a ggml block type: each block's own
 * codes, scales and offsets (a block of the type is one group). */
static void pack_q8_blocks(const lms_pack_job *job, size_t p, size_t j, const unsigned char *row)
{
    const lms_weights *w = job->dst;
    const size_t elements = lms_dtype_block_elements(job->type);
    const size_t bytes = lms_dtype_block_bytes(job->type), per_block = elements / LMS_Q8_BLOCK;
    const size_t blocks = (size_t)lms_weights_blocks(w), groups = (size_t)lms_weights_groups(w);
    const size_t halves = (size_t)w->layout.halves;
    /* the K-quants subtract dmin · m (M = -dmin), Q4_1 and Q5_1 add m */
    const bool subtracted = job->type == LMS_DTYPE_Q4_K || job->type == LMS_DTYPE_Q5_K;
    const uint16_t min_sign = subtracted ? 0x8000 : 0;
    lms_ggml_block block;
    for (size_t g = 0; g < (size_t)w->k / elements; g++) {
        lms_ggml_block_unpack(job->type, row + g * bytes, &block);
        ((uint16_t *)w->scale16)[(p * groups + g) * LMS_PANEL + j] = block.d;
        if (w->offset16)
            ((uint16_t *)w->offset16)[(p * groups + g) * LMS_PANEL + j] = block.dmin ^ min_sign;
        for (size_t s = 0; s < per_block; s++) {
            const size_t b = g * per_block + s, pb = p * blocks + b;
            put_codes(w, p, j, b, block.q + s * LMS_Q8_BLOCK);
            for (size_t h = 0; h < halves; h++)
                ((int8_t *)w->sub_scale)[(pb * halves + h) * LMS_PANEL + j] =
                    (int8_t)block.sc[s * halves + h];
            if (w->sub_offset) ((int8_t *)w->sub_offset)[pb * LMS_PANEL + j] = (int8_t)block.m[s];
        }
    }
}

/* Column j of panel p from a row of Q8_0: each block's f16 scale and its
 * codes, 4 bytes at a time, the bias added as an exclusive or (code + 128
 * mod 256 flips the top bit; bias 0 keeps the byte). The same bytes as
 * pack_q8_blocks, without unpacking each block into an lms_ggml_block:
 * that copy was most of the time an 8B Q8_0 file takes to load. */
static void pack_q8_0_row(const lms_weights *w, size_t p, size_t j, const unsigned char *row)
{
    enum { BLOCK_BYTES = 2 + LMS_Q8_BLOCK, GROUP_BYTES = 4 * LMS_PANEL };
    const size_t blocks = (size_t)lms_weights_blocks(w);
    const uint32_t flip = w->layout.bias == 128 ? 0x80808080u : 0;
    uint8_t *dst = (uint8_t *)w->q8 + p * blocks * LMS_Q8_BLOCK * LMS_PANEL + j * 4;
    uint16_t *scale = (uint16_t *)w->scale16 + p * blocks * LMS_PANEL + j;
    for (size_t b = 0; b < blocks; b++, row += BLOCK_BYTES, dst += LMS_Q8_BLOCK * LMS_PANEL) {
        scale[b * LMS_PANEL] = lms_load_u16(row);
        for (size_t g = 0; g < LMS_Q8_BLOCK / 4; g++) {
            uint32_t four;
            memcpy(&four, row + 2 + 4 * g, sizeof four);
            four ^= flip;
            memcpy(dst + g * GROUP_BYTES, &four, sizeof four);
        }
    }
}

static void pack_q8_panel(const lms_pack_job *job, int32_t p, float *tmp)
{
    const lms_weights *w = job->dst;
    for (int32_t j = 0; j < LMS_PANEL; j++) {
        const int32_t r = p * LMS_PANEL + j;
        if (r >= w->n) {
            pack_q8_zeros(w, (size_t)p, (size_t)j);
            continue;
        }
        const unsigned char *row =
            (const unsigned char *)job->src + (size_t)r * source_row_bytes(job->type, w->k);
        if (job->type == LMS_DTYPE_Q8_0)
            pack_q8_0_row(w, (size_t)p, (size_t)j, row);
        else if (lms_dtype_block_elements(job->type) > 1)
            pack_q8_blocks(job, (size_t)p, (size_t)j, row);
        else
            pack_q8_floats(job, (size_t)p, (size_t)j, row, tmp);
    }
}

typedef struct {
    const lms_pack_job *job;
    int32_t first_panel, n_panels;
} chunk;

/* Drops the whole pages of [begin, end) from memory. */
static void release_pages(const unsigned char *begin, const unsigned char *end)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t first = ((uintptr_t)begin + page - 1) / page * page;
    const uintptr_t last = (uintptr_t)end / page * page;
    if (last > first) madvise((void *)first, last - first, MADV_DONTNEED);
}

static void pack_chunk(const chunk *c, float *tmp)
{
    const lms_pack_job *job = c->job;
    for (int32_t p = c->first_panel; p < c->first_panel + c->n_panels; p++) {
        switch (job->dst->format) {
        case LMS_WEIGHTS_F32:
            pack_f32_panel(job, p, tmp);
            break;
        case LMS_WEIGHTS_F16:
        case LMS_WEIGHTS_BF16:
            pack_w16_panel(job, p, tmp);
            break;
        case LMS_WEIGHTS_Q8:
            pack_q8_panel(job, p, tmp);
            break;
        }
    }
    if (!job->release_source) return;
    const size_t row_bytes = source_row_bytes(job->type, job->dst->k);
    const int32_t r0 = c->first_panel * LMS_PANEL, r1 = (c->first_panel + c->n_panels) * LMS_PANEL;
    const unsigned char *src = job->src;
    release_pages(src + (size_t)r0 * row_bytes,
                  src + (size_t)(r1 < job->dst->n ? r1 : job->dst->n) * row_bytes);
}

lms_status lms_pack_run(const lms_pack_job *jobs, size_t n_jobs, const lms_stop *stop,
                        lms_error *err)
{
    size_t n_chunks = 0;
    int32_t max_k = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        n_chunks += (size_t)(lms_weights_panels(jobs[j].dst) + CHUNK_PANELS - 1) / CHUNK_PANELS;
        int32_t padded = lms_weights_blocks(jobs[j].dst) * LMS_Q8_BLOCK;
        if (padded > max_k) max_k = padded;
    }
    if (n_chunks == 0) return LMS_OK;
    chunk *chunks = malloc(n_chunks * sizeof *chunks);
    if (!chunks) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "packing chunk table");
    size_t c = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        const int32_t panels = lms_weights_panels(jobs[j].dst);
        for (int32_t p = 0; p < panels; p += CHUNK_PANELS)
            chunks[c++] =
                (chunk){&jobs[j], p, panels - p < CHUNK_PANELS ? panels - p : CHUNK_PANELS};
    }
    atomic_bool stopped = false, out_of_memory = false;
    atomic_size_t done = 0;
#pragma omp parallel if (n_chunks > 1)
    {
        float *tmp = malloc((size_t)max_k * sizeof *tmp);
        if (!tmp) atomic_store(&out_of_memory, true);
#pragma omp for schedule(dynamic, 1)
        for (size_t i = 0; i < n_chunks; i++) {
            if (!tmp || atomic_load_explicit(&stopped, memory_order_relaxed)) continue;
            if (stop && stop->should_stop && stop->should_stop(stop->ctx)) {
                atomic_store_explicit(&stopped, true, memory_order_relaxed);
                continue;
            }
            pack_chunk(&chunks[i], tmp);
            lms_progress_piece(stop, "packing the weights", &done, n_chunks);
        }
        free(tmp);
    }
    free(chunks);
    if (atomic_load(&out_of_memory))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for packing scratch");
    if (atomic_load(&stopped))
        return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "stopped while packing the weights");
    return LMS_OK;
}
