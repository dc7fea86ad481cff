/*
 * weights.c — the seeded weight generator, llama.cpp's Q/K row permutation,
 * llama3 rope factors, and the f16 / bf16 encodings (see mm_weights.h).
 */
#include "mm_weights.h"

#include <math.h>
#include <string.h>

#define GOLDEN_GAMMA 0x9E3779B97F4A7C15ull

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t fnv1a64(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

/* Irwin-Hall of four 16-bit uniforms, scaled to unit variance. */
static double normalish(uint64_t r)
{
    uint64_t sum = (r & 0xffff) + ((r >> 16) & 0xffff) + ((r >> 32) & 0xffff) + (r >> 48);
    return (((double)sum + 2.0) / 65536.0 - 2.0) * 1.7320508075688772;
}

static float round_to(mm_dtype dtype, float x)
{
    switch (dtype) {
    case MM_DTYPE_F16:
        return mm_f16_to_f32(mm_f32_to_f16(x));
    case MM_DTYPE_BF16:
        return mm_bf16_to_f32(mm_f32_to_bf16(x));
    default: /* f32, and the block types (whose rounding is the quantiser) */
        break;
    }
    return x;
}

/* convert_hf_to_gguf's LlamaModel rope factors, in float32 as torch computes
 * them: 1 for high frequencies, `factor` for low ones, smoothed between. */
static void llama3_rope_factors(const mm_spec *s, float *out)
{
    const int dim = s->head_dim;
    const float old_context = (float)s->rope_original_context;
    const float low = (float)s->rope_low_freq_factor, high = (float)s->rope_high_freq_factor;
    const float factor = (float)s->rope_factor;
    const float low_freq_wavelen = old_context / low, high_freq_wavelen = old_context / high;
    for (int i = 0; i < dim / 2; i++) {
        float freq = 1.0f / powf((float)s->rope_theta, (float)(2 * i) / (float)dim);
        float wavelen = (float)(2.0 * M_PI) / freq;
        if (wavelen < high_freq_wavelen) {
            out[i] = 1.0f;
        } else if (wavelen > low_freq_wavelen) {
            out[i] = factor;
        } else {
            float smooth = (old_context / wavelen - low) / (high - low);
            out[i] = 1.0f / ((1.0f - smooth) / factor + smooth);
        }
    }
}

void mm_weights_row(const mm_spec *spec, const mm_tensor *t, int64_t row, mm_dtype rounding,
                    float *out)
{
    if (t->init == MM_INIT_ROPE_FREQS) {
        llama3_rope_factors(spec, out);
        return;
    }
    const uint64_t key = mix64(spec->seed ^ mix64(fnv1a64(t->hf_name)));
    const uint64_t first = (uint64_t)row * (uint64_t)t->cols;
    for (int64_t c = 0; c < t->cols; c++) {
        double z = normalish(mix64(key + (first + (uint64_t)c + 1) * GOLDEN_GAMMA));
        out[c] = round_to(rounding, (float)(t->mean + t->std * z));
    }
}

int64_t mm_weights_hf_row(const mm_tensor *t, int64_t gguf_row)
{
    if (t->permute_heads <= 0) return gguf_row;
    /* LlamaModel.permute: reshape(heads, 2, hd/2, cols).swapaxes(1, 2), so
     * GGUF row (h, i, j) holds HF row (h, j, i). */
    const int64_t head_dim = t->rows / t->permute_heads;
    const int64_t head = gguf_row / head_dim, within = gguf_row % head_dim;
    return head * head_dim + (within % 2) * (head_dim / 2) + within / 2;
}

uint16_t mm_f32_to_f16(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    const uint32_t sign = (f >> 16) & 0x8000u, mag = f & 0x7fffffffu;
    if (mag > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* NaN */
    if (mag >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds past 65504 */
    if (mag < 0x38800000u) { /* below 2^-14: an f16 subnormal (or zero) */
        const uint32_t exp = mag >> 23;
        if (exp < 102) return (uint16_t)sign;
        const uint32_t mant = (mag & 0x7fffffu) | 0x800000u, shift = 126 - exp;
        uint32_t h = mant >> shift;
        const uint32_t rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1))) h++;
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((((mag >> 23) - 127 + 15) << 10) | ((mag & 0x7fffffu) >> 13));
    const uint32_t rem = mag & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1))) h++; /* a carry bumps the exponent */
    return (uint16_t)(sign | h);
}

float mm_f16_to_f32(uint16_t h)
{
    const uint32_t sign = (uint32_t)(h & 0x8000u) << 16, exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
    uint32_t f;
    if (exp == 0) {
        float v = ldexpf((float)mant, -24);
        return sign ? -v : v;
    }
    if (exp == 31)
        f = sign | 0x7f800000u | (mant << 13);
    else
        f = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    float v;
    memcpy(&v, &f, sizeof v);
    return v;
}

uint16_t mm_f32_to_bf16(float x)
{
    uint32_t f;
    memcpy(&f, &x, sizeof f);
    if ((f & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((f >> 16) | 0x40u); /* quiet NaN */
    return (uint16_t)(((uint64_t)f + 0x7fffu + ((f >> 16) & 1u)) >> 16);
}

float mm_bf16_to_f32(uint16_t b)
{
    const uint32_t f = (uint32_t)b << 16;
    float v;
    memcpy(&v, &f, sizeof v);
    return v;
}
