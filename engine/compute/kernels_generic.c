/*
 * kernels_generic.c — the generic tier's kernel (kernels.h): the f32
 * dense kernel of kernels_common.h in plain C for any x86-64, one lane per
 * "vector", each fused multiply-add through fmaf (exact on any CPU, fast
 * only with FMA).
 */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "half.h"

#define VL 1
typedef float vf;
#define vf_zero()            0.0f
#define vf_set1(s)           (s)
#define vf_fma(a, b, c)      fmaf(a, b, c)
#define vf_add(a, b)         ((a) + (b))
#define vf_loadu(p)          (*(p))
#define vf_load(p, n)        ((n) > 0 ? *(p) : 0.0f)
#define vf_store(p, v, n)    ((n) > 0 ? (void)(*(p) = (v)) : (void)0)
#define vf_load_w16(p, bf16) ((bf16) ? lms_bf16_to_f32(*(p)) : lms_f16_to_f32(*(p)))
#define DENSE_ROWS           4

#include "kernels_common.h"
#include "vec_impl.h"

DEFINE_F32_KERNELS(generic);
DEFINE_VEC_KERNELS(generic);
