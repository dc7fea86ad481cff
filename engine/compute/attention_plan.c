/*
 * attention_plan.c — cuts a batch into attention blocks (see attention_plan.h).
 *
 * A block is either a piece of the causal prefix, a piece of one long
 * segment, or several whole short segments; it runs from its first row to
 * the row where the next block starts (rows between segments belong to no
 * segment and are zeros). The dense-mask mode keeps the rows in blocks of
 * block_rows and builds the T×T visibility mask instead of pieces.
 */
#include "attention_plan.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static void add_block(attn_plan *p, int32_t r0, int32_t r1, int32_t shared)
{
    attn_block *b = &p->blocks[p->n_blocks++];
    b->r0 = r0;
    b->r1 = r1;
    b->shared = shared;
    b->first_piece = p->n_pieces;
    b->end_piece = p->n_pieces;
    if (r1 - r0 > p->max_rows) p->max_rows = r1 - r0;
    if (shared + p->cached > p->max_shared) p->max_shared = shared + p->cached;
}

static void add_piece(attn_plan *p, int32_t a, int32_t b, int32_t own0)
{
    attn_piece *pc = &p->pieces[p->n_pieces++];
    pc->a = a;
    pc->b = b;
    pc->own0 = own0;
    p->blocks[p->n_blocks - 1].end_piece = p->n_pieces;
    if (b - own0 > p->max_own_keys) p->max_own_keys = b - own0;
}

static lms_status check_layout(const attn_layout *l, lms_error *err)
{
    if (l->n_rows <= 0 || l->prefix_rows < 0 || l->prefix_rows > l->n_rows || l->n_segments < 0)
        return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "attention: bad layout sizes");
    int32_t prev_end = l->prefix_rows;
    for (int32_t s = 0; s < l->n_segments; s++) {
        if (l->seg_begin[s] < prev_end || l->seg_end[s] <= l->seg_begin[s] ||
            l->seg_end[s] > l->n_rows)
            return lms_fail(err, LMS_ERR_INTERNAL, NULL, NULL, "attention: bad segment %d", s);
        prev_end = l->seg_end[s];
    }
    return LMS_OK;
}

static void build_mask(attn_plan *p, const attn_layout *l)
{
    int32_t t = l->n_rows;
    memset(p->mask, 0, (size_t)t * t);
    for (int32_t r = 0; r < l->prefix_rows; r++)
        memset(p->mask + (size_t)r * t, 1, r + 1);
    for (int32_t s = 0; s < l->n_segments; s++)
        for (int32_t r = l->seg_begin[s]; r < l->seg_end[s]; r++) {
            uint8_t *row = p->mask + (size_t)r * t;
            memset(row, 1, l->prefix_rows);
            memset(row + l->seg_begin[s], 1, r - l->seg_begin[s] + 1);
        }
}

/* Floats of scratch one thread needs (attention.c): the dense mode's block
 * of score rows over every key and one compacted row, or the segment mode's
 * score rows of a group of pieces (at most a block's rows; shared then own
 * keys) and one piece's own-key products (whole panels of 32 keys). */
static size_t thread_scratch_floats(const attn_plan *p)
{
    const size_t keys = (size_t)(p->cached + p->n_rows);
    if (p->mask) return (size_t)p->geo.block_rows * keys + keys;
    const size_t rows = (size_t)p->max_rows, own = (size_t)p->max_own_keys;
    return rows * ((size_t)p->max_shared + own) + rows * (own + 64);
}

/* Allocates the threads' scratch and hands the plan out, or frees it. Once
 * per plan, not per layer: a fresh multi-megabyte buffer per layer would
 * come back as new zeroed pages every time, cleared by the kernel. */
static lms_status finish_plan(attn_plan *p, attn_plan **out, lms_error *err)
{
    p->n_threads = omp_get_max_threads();
    p->scratch_floats = thread_scratch_floats(p);
    p->scratch = lms_alloc((size_t)p->n_threads * p->scratch_floats * sizeof(float));
    p->key_panels = (p->cached + p->n_rows + 31) / 32;
    p->value_panels = (p->geo.head_dim + 31) / 32;
    const size_t kv_panels = (size_t)p->geo.n_kv_heads * p->key_panels;
    p->keys_t = lms_alloc(kv_panels * p->geo.head_dim * 32 * sizeof(float));
    p->values = lms_alloc(kv_panels * p->value_panels * 32 * 32 * sizeof(float));
    if (!p->scratch || !p->keys_t || !p->values) {
        attn_plan_free(p);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for attention scratch");
    }
    *out = p;
    return LMS_OK;
}

lms_status attn_plan_create(const attn_layout *l, const attn_geometry *geo, int32_t cached_rows,
                            attn_plan **out, lms_error *err)
{
    *out = NULL;
    lms_status st = check_layout(l, err);
    if (st != LMS_OK) return st;
    attn_plan *p = calloc(1, sizeof *p);
    if (!p) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for an attention plan");
    p->geo = *geo;
    p->n_rows = l->n_rows;
    p->cached = cached_rows;
    const int32_t br = geo->block_rows;
    /* Upper bounds: prefix pieces, plus per segment its pieces (one more
     * block per segment at most, as blocks never split a short segment). */
    int64_t max_items = l->prefix_rows / br + 2;
    for (int32_t s = 0; s < l->n_segments; s++)
        max_items += (l->seg_end[s] - l->seg_begin[s]) / br + 2;
    p->blocks = calloc(max_items, sizeof *p->blocks);
    p->pieces = calloc(max_items, sizeof *p->pieces);
    if (!p->blocks || !p->pieces) goto nomem;

    if (l->dense_mask) {
        p->mask = lms_alloc((size_t)l->n_rows * l->n_rows);
        if (!p->mask) goto nomem;
        build_mask(p, l);
        for (int32_t r0 = 0; r0 < l->n_rows; r0 += br) {
            int32_t r1 = r0 + br < l->n_rows ? r0 + br : l->n_rows;
            add_block(p, r0, r1, 0);
        }
        p->max_shared = l->n_rows + cached_rows;
        return finish_plan(p, out, err);
    }

    /* The causal prefix, in blocks of br rows; the last one runs up to the
     * first segment. */
    int32_t first_seg_row = l->n_segments ? l->seg_begin[0] : l->n_rows;
    for (int32_t r0 = 0; r0 < l->prefix_rows; r0 += br) {
        int32_t r1 = r0 + br < l->prefix_rows ? r0 + br : l->prefix_rows;
        add_block(p, r0, r1 < l->prefix_rows ? r1 : first_seg_row, 0);
        add_piece(p, r0, r1, 0);
    }
    /* Segments: short ones grouped whole into blocks of up to br rows, long
     * ones cut into pieces of br rows, each piece its own block. */
    for (int32_t s = 0; s < l->n_segments;) {
        int32_t b0 = l->seg_begin[s];
        int32_t len = l->seg_end[s] - b0;
        if (len > br) {
            for (int32_t a = b0; a < l->seg_end[s]; a += br) {
                int32_t b = a + br < l->seg_end[s] ? a + br : l->seg_end[s];
                int32_t r1 = b < l->seg_end[s]       ? b
                             : s + 1 < l->n_segments ? l->seg_begin[s + 1]
                                                     : l->n_rows;
                add_block(p, a, r1, l->prefix_rows);
                add_piece(p, a, b, b0);
            }
            s++;
            continue;
        }
        int32_t e = s;
        while (e + 1 < l->n_segments && l->seg_end[e + 1] - b0 <= br &&
               l->seg_end[e + 1] - l->seg_begin[e + 1] <= br)
            e++;
        int32_t r1 = e + 1 < l->n_segments ? l->seg_begin[e + 1] : l->n_rows;
        add_block(p, b0, r1, l->prefix_rows);
        for (int32_t i = s; i <= e; i++)
            add_piece(p, l->seg_begin[i], l->seg_end[i], l->seg_begin[i]);
        s = e + 1;
    }
    return finish_plan(p, out, err);
nomem:
    attn_plan_free(p);
    return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for an attention plan");
}

void attn_plan_free(attn_plan *p)
{
    if (!p) return;
    free(p->blocks);
    free(p->pieces);
    lms_free(p->mask);
    lms_free(p->scratch);
    lms_free(p->keys_t);
    lms_free(p->values);
    free(p);
}
