/*
 * mm_weights.h — the values of every weight, as a pure function of
 * (seed, tensor name, element index), and the numeric formats they are
 * stored in.
 *
 * Generator: a counter-based splitmix64. The key of a tensor is
 * mix64(seed ^ mix64(fnv1a64(hf_name))); element i of its PyTorch
 * (row-major [rows, cols]) layout draws
 *     r = mix64(key + (i + 1) * 0x9E3779B97F4A7C15)
 * and its four 16-bit lanes u0..u3 give z = (sum (u_k + 0.5) / 65536 - 2) * sqrt(3),
 * an Irwin-Hall variate with mean 0 and variance 1 (bounded by +-3.47).
 * The value is mean + std * z, rounded to the checkpoint dtype (that of the
 * Hugging Face twin) so the GGUF and Hugging Face files hold the same
 * numbers. Being counter-based, any row
 * can be produced independently: generation is parallel and its result does
 * not depend on the thread count.
 */
#ifndef MM_WEIGHTS_H
#define MM_WEIGHTS_H

#include <stdint.h>

#include "mm_spec.h"
#include "mm_tensors.h"

/* Row `row` of tensor t in its PyTorch layout (cols floats), rounded to
 * `rounding` (MM_DTYPE_F32: not rounded). Callers that store the row in the
 * checkpoint dtype itself pass F32 and let the encoding round, once. */
void mm_weights_row(const mm_spec *spec, const mm_tensor *t, int64_t row, mm_dtype rounding,
                    float *out);

/* The Hugging Face row stored as row `gguf_row` of the GGUF tensor (differs
 * only for llama's permuted Q/K). */
int64_t mm_weights_hf_row(const mm_tensor *t, int64_t gguf_row);

/* Round-to-nearest-even conversions, as numpy/torch do them. */
uint16_t mm_f32_to_f16(float x);
float mm_f16_to_f32(uint16_t h);
uint16_t mm_f32_to_bf16(float x);
float mm_bf16_to_f32(uint16_t b);

#endif
