/*
 * weights.c — the packed formats' element values (see weights.h).
 */
#include "weights.h"

#include "half.h"
#include "names.h"

static const char *const PRECISION_NAMES[] = {
    [LMS_PRECISION_AUTO] = "auto",     [LMS_PRECISION_F32] = "f32",
    [LMS_PRECISION_BF16] = "bf16",     [LMS_PRECISION_INT8] = "int8",
    [LMS_PRECISION_INT8X2] = "int8x2", [LMS_PRECISION_BF16X2] = "bf16x2",
};

const char *lms_precision_name(lms_precision precision)
{
    return lms_name_of(PRECISION_NAMES, LMS_COUNT_OF(PRECISION_NAMES), (unsigned)precision);
}

bool lms_precision_parse(const char *name, lms_precision *out)
{
    unsigned value;
    if (!lms_name_find(PRECISION_NAMES, LMS_COUNT_OF(PRECISION_NAMES), name, &value)) return false;
    *out = (lms_precision)value;
    return true;
}

const char *lms_weights_format_name(lms_weights_format format)
{
    switch (format) {
    case LMS_WEIGHTS_F32:
        return "f32";
    case LMS_WEIGHTS_F16:
        return "f16";
    case LMS_WEIGHTS_BF16:
        return "bf16";
    case LMS_WEIGHTS_Q8:
        return "q8";
    }
    return "unknown";
}

void lms_weights_q8_parts(const lms_weights *w, size_t bytes[LMS_Q8_PARTS])
{
    const size_t panels = (size_t)lms_weights_panels(w), blocks = (size_t)lms_weights_blocks(w);
    const size_t groups = (size_t)lms_weights_groups(w);
    const lms_q8_layout *l = &w->layout;
    bytes[0] = panels * blocks * LMS_Q8_BLOCK * LMS_PANEL;
    bytes[1] = panels * groups * LMS_PANEL * sizeof(uint16_t);
    bytes[2] = l->offsets ? bytes[1] : 0;
    bytes[3] = panels * blocks * (size_t)l->halves * LMS_PANEL;
    bytes[4] = l->sub_offsets ? panels * blocks * LMS_PANEL : 0;
}

size_t lms_weights_bytes(const lms_weights *w)
{
    const size_t panels = (size_t)lms_weights_panels(w);
    switch (w->format) {
    case LMS_WEIGHTS_F32:
        return panels * (size_t)w->k * LMS_PANEL * sizeof(float);
    case LMS_WEIGHTS_F16:
    case LMS_WEIGHTS_BF16:
        return panels * (size_t)w->k * LMS_PANEL * sizeof(uint16_t);
    case LMS_WEIGHTS_Q8: {
        size_t parts[LMS_Q8_PARTS], total = 0;
        lms_weights_q8_parts(w, parts);
        for (int i = 0; i < LMS_Q8_PARTS; i++)
            total += parts[i];
        return total;
    }
    }
    return 0;
}

/* Element (column j, k index kk) of panel p of a Q8 matrix, as weights.h
 * defines it. */
static float q8_value(const lms_weights *w, size_t p, size_t j, int32_t kk)
{
    const size_t blocks = (size_t)lms_weights_blocks(w), groups = (size_t)lms_weights_groups(w);
    const size_t b = (size_t)kk / LMS_Q8_BLOCK, i = (size_t)kk % LMS_Q8_BLOCK;
    const size_t pb = p * blocks + b, pg = p * groups + b / (size_t)w->layout.group_blocks;
    const int32_t code = lms_weights_q8_code(w, pb, (int32_t)i, j);
    const float d = lms_f16_to_f32(w->scale16[pg * LMS_PANEL + j]);
    const size_t halves = (size_t)w->layout.halves;
    const float s =
        w->sub_scale
            ? d * (float)w->sub_scale[(pb * halves + i * halves / LMS_Q8_BLOCK) * LMS_PANEL + j]
            : d;
    if (!w->offset16) return (float)code * s;
    const float m = lms_f16_to_f32(w->offset16[pg * LMS_PANEL + j]);
    const float o = w->sub_offset ? m * (float)w->sub_offset[pb * LMS_PANEL + j] : m;
    return (float)code * s + o;
}

void lms_weights_row(const lms_weights *w, int32_t r, float *out)
{
    const size_t p = (size_t)(r / LMS_PANEL), j = (size_t)(r % LMS_PANEL);
    switch (w->format) {
    case LMS_WEIGHTS_F32: {
        const float *col = w->f32 + p * (size_t)w->k * LMS_PANEL + j;
        for (int32_t kk = 0; kk < w->k; kk++)
            out[kk] = col[(size_t)kk * LMS_PANEL];
        return;
    }
    case LMS_WEIGHTS_F16:
    case LMS_WEIGHTS_BF16: {
        const uint16_t *panel = w->w16 + p * (size_t)w->k * LMS_PANEL;
        for (int32_t kk = 0; kk < w->k; kk++) {
            const uint16_t h = panel[lms_weights_w16_at(w, kk, (int32_t)j)];
            out[kk] = w->format == LMS_WEIGHTS_F16 ? lms_f16_to_f32(h) : lms_bf16_to_f32(h);
        }
        return;
    }
    case LMS_WEIGHTS_Q8:
        for (int32_t kk = 0; kk < w->k; kk++)
            out[kk] = q8_value(w, p, j, kk);
        return;
    }
}
