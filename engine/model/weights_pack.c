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

/* Panels per parallel task. */
#define CHUNK_PANELS 4

bool lms_pack_supported(lms_dtype type, lms_weights_format format)
{
    switch (format) {
    case LMS_WEIGHTS_F16:
        return type == LMS_DTYPE_F16;
    case LMS_WEIGHTS_BF16:
        return true;
    case LMS_WEIGHTS_Q8:
        return true;
    case LMS_WEIGHTS_F32:
        break;
    }
    return false;
}

lms_status lms_weights_alloc(lms_weights *w, lms_weights_format format, int32_t n, int32_t k,
                             void **buffer, lms_error *err)
{
    *buffer = NULL;
    memset(w, 0, sizeof *w);
    w->format = format;
    w->n = n;
    w->k = k;
    size_t bytes = lms_weights_bytes(w);
    unsigned char *data = lms_alloc(bytes);
    if (!data)
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL,
                        "no memory for a %d x %d %s matrix (%zu bytes)", n, k,
                        lms_weights_format_name(format), bytes);
    if (format == LMS_WEIGHTS_Q8) {
        w->q8 = data;
        w->scale16 =
            (const uint16_t *)(data + (size_t)lms_weights_panels(w) *
                                          (size_t)lms_weights_blocks(w) * LMS_PANEL * LMS_Q8_BLOCK);
    } else {
        w->w16 = (const uint16_t *)data;
    }
    *buffer = data;
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

/* One panel of a 16-bit format: column j of the panel is row 32p + j. */
static void pack_w16_panel(const lms_pack_job *job, int32_t p, float *tmp)
{
    const lms_weights *w = job->dst;
    uint16_t *panel = (uint16_t *)w->w16 + (size_t)p * w->k * LMS_PANEL;
    const bool same = (job->type == LMS_DTYPE_F16 && w->format == LMS_WEIGHTS_F16) ||
                      (job->type == LMS_DTYPE_BF16 && w->format == LMS_WEIGHTS_BF16);
    for (int32_t j = 0; j < LMS_PANEL; j++) {
        const int32_t r = p * LMS_PANEL + j;
        uint16_t *col = panel + j;
        if (r >= w->n) {
            for (int32_t kk = 0; kk < w->k; kk++)
                col[(size_t)kk * LMS_PANEL] = 0;
            continue;
        }
        const unsigned char *row =
            (const unsigned char *)job->src + (size_t)r * source_row_bytes(job->type, w->k);
        if (same) {
            for (int32_t kk = 0; kk < w->k; kk++)
                col[(size_t)kk * LMS_PANEL] = lms_load_u16(row + 2 * (size_t)kk);
            continue;
        }
        source_row_f32(job->type, row, w->k, tmp);
        for (int32_t kk = 0; kk < w->k; kk++)
            col[(size_t)kk * LMS_PANEL] = lms_f32_to_bf16(tmp[kk]);
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

static void pack_q8_panel(const lms_pack_job *job, int32_t p, float *tmp)
{
    const lms_weights *w = job->dst;
    const int32_t blocks = lms_weights_blocks(w);
    uint8_t *q8 = (uint8_t *)w->q8;
    uint16_t *scales = (uint16_t *)w->scale16;
    for (int32_t j = 0; j < LMS_PANEL; j++) {
        const int32_t r = p * LMS_PANEL + j;
        const unsigned char *row = r < w->n ? (const unsigned char *)job->src +
                                                  (size_t)r * source_row_bytes(job->type, w->k)
                                            : NULL;
        if (row && job->type != LMS_DTYPE_Q8_0) {
            memset(tmp, 0, (size_t)blocks * LMS_Q8_BLOCK * sizeof *tmp);
            source_row_f32(job->type, row, w->k, tmp);
        }
        for (int32_t b = 0; b < blocks; b++) {
            int8_t codes[LMS_Q8_BLOCK] = {0};
            uint16_t scale = 0;
            if (row && job->type == LMS_DTYPE_Q8_0) {
                const unsigned char *block =
                    row + (size_t)b * lms_dtype_block_bytes(LMS_DTYPE_Q8_0);
                scale = lms_load_u16(block);
                memcpy(codes, block + 2, sizeof codes);
            } else if (row) {
                scale = quantize_block(tmp + (size_t)b * LMS_Q8_BLOCK, codes);
            }
            const size_t pb = (size_t)p * blocks + b;
            uint8_t *dst = q8 + pb * LMS_Q8_BLOCK * LMS_PANEL;
            for (int i = 0; i < LMS_Q8_BLOCK; i++)
                dst[(i / 4) * LMS_PANEL * 4 + j * 4 + i % 4] = (uint8_t)(codes[i] + 128);
            scales[pb * LMS_PANEL + j] = scale;
        }
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
        if (job->dst->format == LMS_WEIGHTS_Q8)
            pack_q8_panel(job, p, tmp);
        else
            pack_w16_panel(job, p, tmp);
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
