/*
 * mm_quant.h — quantising rows to ggml's block formats with the same bytes
 * as ggml's own reference quantisers (quantize_row_*_ref in ggml-quants.c,
 * the ones llama.cpp uses when no importance matrix is given), so a file
 * the maker writes equals what ggml would write for the same f32 values.
 */
#ifndef MM_QUANT_H
#define MM_QUANT_H

#include <stdint.h>

#include "mm_dtype.h"

/* type is a block type (Q4_0 ... Q6_K); n a multiple of its block; out
 * receives mm_dtype_bytes(type, n) bytes. */
void mm_quantize_row(mm_dtype type, const float *x, int64_t n, uint8_t *out);

#endif
