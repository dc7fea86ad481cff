/*
 * tensor_convert.c — F16/BF16/F32 and ggml's block formats → f32 (see
 * tensor_convert.h); the blocks decode in ggml_blocks.c.
 */
#include "tensor_convert.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ggml_blocks.h"
#include "half.h"
#include "progress.h"

/* Elements per parallel task: big enough to amortise scheduling, a
 * multiple of every block (the K-quants' 256 included). */
#define CHUNK_ELEMENTS (64 * 1024)

static void f16_run(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = lms_f16_to_f32(lms_load_u16(src + 2 * i));
}

static void bf16_run(const unsigned char *src, float *dst, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = lms_bf16_to_f32(lms_load_u16(src + 2 * i));
}

/* Bytes that n elements (whole blocks) occupy at the source. */
static size_t source_bytes(lms_dtype type, size_t n)
{
    return n / lms_dtype_block_elements(type) * lms_dtype_block_bytes(type);
}

/* A piece of one job, small enough to balance across threads. */
typedef struct {
    const lms_convert_job *job;
    size_t first, count;
} chunk;

static void convert_chunk(const chunk *c)
{
    const lms_convert_job *job = c->job;
    const unsigned char *in = (const unsigned char *)job->src + source_bytes(job->type, c->first);
    float *out = job->dst + c->first;
    switch (job->type) {
    case LMS_DTYPE_F32:
        memcpy(out, in, c->count * sizeof *out);
        break;
    case LMS_DTYPE_F16:
        f16_run(in, out, c->count);
        break;
    case LMS_DTYPE_BF16:
        bf16_run(in, out, c->count);
        break;
    default:
        lms_ggml_blocks_to_f32(job->type, in, c->count / lms_dtype_block_elements(job->type), out);
        break;
    }
}

lms_status lms_convert_to_f32(const lms_convert_job *jobs, size_t n_jobs, const lms_stop *stop,
                              lms_error *err)
{
    size_t n_chunks = 0;
    for (size_t j = 0; j < n_jobs; j++)
        n_chunks += (jobs[j].n + CHUNK_ELEMENTS - 1) / CHUNK_ELEMENTS;
    if (n_chunks == 0) return LMS_OK;
    chunk *chunks = malloc(n_chunks * sizeof *chunks);
    if (!chunks) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "conversion chunk table");
    size_t k = 0;
    for (size_t j = 0; j < n_jobs; j++) {
        for (size_t first = 0; first < jobs[j].n; first += CHUNK_ELEMENTS) {
            size_t left = jobs[j].n - first;
            chunks[k++] = (chunk){&jobs[j], first, left < CHUNK_ELEMENTS ? left : CHUNK_ELEMENTS};
        }
    }
    atomic_bool stopped = false;
    atomic_size_t done = 0;
#pragma omp parallel for schedule(dynamic, 1) if (n_chunks > 1)
    for (size_t c = 0; c < n_chunks; c++) {
        if (atomic_load_explicit(&stopped, memory_order_relaxed)) continue;
        if (stop && stop->should_stop && stop->should_stop(stop->ctx)) {
            atomic_store_explicit(&stopped, true, memory_order_relaxed);
            continue;
        }
        convert_chunk(&chunks[c]);
        lms_progress_piece(stop, "converting the weights", &done, n_chunks);
    }
    free(chunks);
    if (atomic_load(&stopped))
        return lms_fail(err, LMS_ERR_CANCELLED, NULL, NULL, "stopped while converting the weights");
    return LMS_OK;
}
