/*
 * stream.c — tensor data in chunks of rows: generate (parallel over rows),
 * encode to the storage type, append to the file.
 */
#include "mm_stream.h"

#include <stdlib.h>
#include <string.h>

#include "mm_quant.h"
#include "mm_weights.h"

#define CHUNK_ELEMENTS (4 << 20)

uint64_t mm_tensor_bytes(const mm_tensor *t, mm_dtype type)
{
    return mm_dtype_bytes(type, t->cols) * (uint64_t)t->rows;
}

static void encode_row(const float *x, int64_t n, mm_dtype type, uint8_t *out)
{
    switch (type) {
    case MM_DTYPE_F32:
        for (int64_t i = 0; i < n; i++) {
            uint32_t bits;
            memcpy(&bits, &x[i], 4);
            for (int k = 0; k < 4; k++)
                out[4 * i + k] = (uint8_t)(bits >> (8 * k));
        }
        return;
    case MM_DTYPE_F16:
    case MM_DTYPE_BF16:
        for (int64_t i = 0; i < n; i++) {
            uint16_t h = type == MM_DTYPE_F16 ? mm_f32_to_f16(x[i]) : mm_f32_to_bf16(x[i]);
            out[2 * i] = (uint8_t)(h & 0xff);
            out[2 * i + 1] = (uint8_t)(h >> 8);
        }
        return;
    default:
        mm_quantize_row(type, x, n, out);
        return;
    }
}

lms_status mm_stream_tensor(mm_out *out, const mm_spec *spec, const mm_tensor *t, mm_dtype type,
                            mm_layout layout, lms_error *err)
{
    if (t->cols % mm_dtype_about(type)->block != 0)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL,
                        "%s: %lld columns cannot be stored as %s", t->gguf_name, (long long)t->cols,
                        mm_dtype_name(type));
    const int64_t chunk_rows = t->cols >= CHUNK_ELEMENTS ? 1 : CHUNK_ELEMENTS / t->cols;
    const int64_t rows = chunk_rows < t->rows ? chunk_rows : t->rows;
    const uint64_t encoded_row = mm_dtype_bytes(type, t->cols);
    /* Stored in the checkpoint dtype, the encoding is the rounding; stored
     * otherwise (F32 norms of an f16 model), round to it first. */
    const mm_dtype checkpoint = mm_spec_checkpoint_dtype(spec);
    const mm_dtype rounding = type == checkpoint ? MM_DTYPE_F32 : checkpoint;
    float *values = malloc((size_t)(rows * t->cols) * sizeof *values);
    uint8_t *encoded = malloc((size_t)(encoded_row * (uint64_t)rows));
    if (!values || !encoded) {
        free(values);
        free(encoded);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory to generate %s", t->gguf_name);
    }
    for (int64_t first = 0; first < t->rows; first += rows) {
        const int64_t n = t->rows - first < rows ? t->rows - first : rows;
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < n; r++) {
            const int64_t row =
                layout == MM_LAYOUT_GGUF ? mm_weights_hf_row(t, first + r) : first + r;
            float *x = values + r * t->cols;
            mm_weights_row(spec, t, row, rounding, x);
            encode_row(x, t->cols, type, encoded + (uint64_t)r * encoded_row);
        }
        mm_out_write(out, encoded, (size_t)(encoded_row * (uint64_t)n));
    }
    free(values);
    free(encoded);
    return LMS_OK;
}
