/*
 * ggml_blocks.h — decoding ggml's quantised block formats to f32: Q4_0,
 * Q4_1, Q5_0, Q5_1, Q8_0 (32 elements per block) and the K-quants Q4_K,
 * Q5_K, Q6_K (256-element super-blocks).
 *
 * Every value equals ggml's own dequantisation (dequantize_row_* in
 * ggml-quants.c) bit for bit: the same f16 decoding, the same products and
 * sums in the same order, nothing fused. Layouts (little-endian, packed):
 *
 *   Q4_0  f16 d, 16 B nibbles q            x = (q - 8) d
 *   Q4_1  f16 d, f16 m, 16 B nibbles q     x = q d + m
 *   Q5_0  f16 d, u32 high bits, 16 B       x = (q - 16) d          (5-bit q)
 *   Q5_1  f16 d, f16 m, u32 high bits, 16 B  x = q d + m           (5-bit q)
 *   Q8_0  f16 d, 32 int8 q                 x = q d
 *   Q4_K  f16 d, f16 dmin, 12 B of 6-bit (scale, min) pairs for 8
 *         sub-blocks of 32, 128 B nibbles  x = (d sc) q - (dmin m)
 *   Q5_K  as Q4_K plus 32 B of high bits   x = (d sc) q - (dmin m)  (5-bit q)
 *   Q6_K  128 B low nibbles, 64 B high 2-bit pairs, 16 int8 scales for
 *         sub-blocks of 16, f16 d          x = (d sc) (q - 32)      (6-bit q)
 */
#ifndef LMS_GGML_BLOCKS_H
#define LMS_GGML_BLOCKS_H

#include <stddef.h>

#include "dtype.h"

/* Decodes n_blocks consecutive blocks of type (a block type of dtype.h)
 * from src, at any byte address, into n_blocks × the block's element count
 * floats at dst. */
void lms_ggml_blocks_to_f32(lms_dtype type, const unsigned char *src, size_t n_blocks, float *dst);

#endif
