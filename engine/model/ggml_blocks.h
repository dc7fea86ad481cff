/*
 * ggml_blocks.h — ggml's quantised block formats: Q4_0, Q4_1, Q5_0, Q5_1,
 * Q8_0 (32 elements per block) and the K-quants Q4_K, Q5_K, Q6_K
 * (256-element super-blocks), unpacked to their integers and scales, and
 * decoded to f32.
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
#include <stdint.h>

#include "dtype.h"

#define LMS_GGML_MAX_BLOCK 256 /* elements in the largest block (the K-quants) */

/* One block's numbers as stored, element i in order:
 *   q     the integer each element's value is made from: q - 8 (Q4_0),
 *         q - 16 (Q5_0), q - 32 (Q6_K), q itself for the others
 *   d     f16 bits of the scale (d)
 *   dmin  f16 bits of the offset: m (Q4_1, Q5_1), dmin (Q4_K, Q5_K)
 *   sc    Q4_K, Q5_K: the 6-bit scale of each sub-block of 32 (element i's
 *         is sc[i / 32]); Q6_K: the int8 scale of each sub-block of 16
 *         (sc[i / 16], the byte as stored)
 *   m     Q4_K, Q5_K: the 6-bit min of each sub-block of 32 (m[i / 32])
 * Fields a type does not have are zero. */
typedef struct {
    int8_t q[LMS_GGML_MAX_BLOCK];
    uint16_t d, dmin;
    uint8_t sc[16];
    uint8_t m[8];
} lms_ggml_block;

/* The block of type (a block type of dtype.h) at src, at any byte address. */
void lms_ggml_block_unpack(lms_dtype type, const unsigned char *src, lms_ggml_block *out);

/* Decodes n_blocks consecutive blocks of type from src, at any byte
 * address, into n_blocks × the block's element count floats at dst. */
void lms_ggml_blocks_to_f32(lms_dtype type, const unsigned char *src, size_t n_blocks, float *dst);

#endif
