/*
 * test_attention_plan.c — the attention planner (attention_plan.c) on the
 * layouts the scoring algorithms build and on hand-made edge cases: blocks
 * cover every row once and start at multiples of the layout's alignment, pieces
 * cover every prefix and segment row once and never cross a segment, short
 * segments are grouped and long ones cut, padding rows are in no piece, the
 * scratch holds what any block needs (cached rows included), the dense mode's
 * mask is the visibility attention.h defines, and bad layouts are refused.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention_plan.h"

#define HEAD_DIM   16
#define MAX_SEGS   400
#define MAX_ROWS   (1 << 16)
#define NO_SEGMENT (-1)

/* A layout: prefix rows, then segments each starting at a multiple of
 * align (1: packed as score.c builds them; more: rows between the segments
 * that belong to none). */
typedef struct {
    int32_t align;
    int32_t prefix;
    int32_t n_segs;
    int32_t begin[MAX_SEGS], end[MAX_SEGS];
    int32_t n_rows;
} layout_spec;

static int32_t padded(int32_t n, int32_t align)
{
    return (n + align - 1) / align * align;
}

/* Block rows for a layout: the smallest multiple of align from
 * ATTN_BLOCK_ROWS, so that blocks of every size come up. */
static int32_t block_rows_for(int32_t align)
{
    return padded(ATTN_BLOCK_ROWS, align);
}

/* Segments of the given lengths after a prefix of `prefix` rows. */
static void make_layout(layout_spec *s, int32_t align, int32_t prefix, const int32_t *lens,
                        int32_t n)
{
    assert_true(n <= MAX_SEGS);
    s->align = align;
    s->prefix = prefix;
    s->n_segs = n;
    int32_t row = padded(prefix, align);
    for (int32_t i = 0; i < n; i++) {
        s->begin[i] = row;
        s->end[i] = row + lens[i];
        row = padded(s->end[i], align);
    }
    s->n_rows = row > 0 ? row : align;
    assert_true(s->n_rows <= MAX_ROWS);
}

static attn_layout as_layout(const layout_spec *s, bool dense)
{
    return (attn_layout){.n_rows = s->n_rows,
                         .prefix_rows = s->prefix,
                         .n_segments = s->n_segs,
                         .seg_begin = s->begin,
                         .seg_end = s->end,
                         .dense_mask = dense};
}

static attn_plan *plan_of(const layout_spec *s, bool dense, int32_t cached)
{
    attn_layout l = as_layout(s, dense);
    attn_geometry geo = {4, 2, HEAD_DIM, block_rows_for(s->align), NULL, NULL, NULL};
    attn_plan *p = (attn_plan *)1;
    lms_error err = {0};
    if (attn_plan_create(&l, &geo, cached, &p, &err) != LMS_OK)
        fail_msg("plan refused: %s", err.msg);
    assert_non_null(p);
    return p;
}

/* The segment of each row (NO_SEGMENT for prefix and padding rows). */
static void segment_of_rows(const layout_spec *s, int32_t *seg)
{
    for (int32_t r = 0; r < s->n_rows; r++)
        seg[r] = NO_SEGMENT;
    for (int32_t i = 0; i < s->n_segs; i++)
        for (int32_t r = s->begin[i]; r < s->end[i]; r++)
            seg[r] = i;
}

/* Floats of one thread's scratch that block b needs (attention.c's
 * block_head_segment, a piece at a time: its rows' scores over the shared
 * and own keys, then its own-key products in whole panels of 32 keys). */
static size_t block_scratch_floats(const attn_plan *p, const attn_block *b)
{
    size_t most = 0;
    for (int32_t i = b->first_piece; i < b->end_piece; i++) {
        const size_t rows = (size_t)(p->pieces[i].b - p->pieces[i].a);
        const size_t own = (size_t)(p->pieces[i].b - p->pieces[i].own0);
        const size_t need = rows * ((size_t)(p->cached + b->shared) + own) + rows * (own + 64);
        if (need > most) most = need;
    }
    return most;
}

/* Every rule of a segment-mode plan, for a layout built by make_layout. */
static void check_segment_plan(const attn_plan *p, const layout_spec *s, int32_t cached)
{
    static int32_t seg[MAX_ROWS], in_block[MAX_ROWS], in_piece[MAX_ROWS];
    const int32_t br = p->geo.block_rows, t = s->n_rows;
    segment_of_rows(s, seg);
    memset(in_block, 0, (size_t)t * sizeof *in_block);
    memset(in_piece, 0, (size_t)t * sizeof *in_piece);
    assert_null(p->mask);
    assert_int_equal(p->n_rows, t);
    assert_int_equal(p->cached, cached);
    assert_true(p->n_blocks > 0);
    assert_int_equal(p->blocks[0].r0, 0);
    assert_int_equal(p->blocks[p->n_blocks - 1].r1, t);
    assert_int_equal(p->blocks[0].first_piece, 0);
    assert_int_equal(p->blocks[p->n_blocks - 1].end_piece, p->n_pieces);
    int32_t max_shared = 0, max_rows = 0, max_own_keys = 0;
    for (int32_t bi = 0; bi < p->n_blocks; bi++) {
        const attn_block *b = &p->blocks[bi];
        if (bi > 0) {
            assert_int_equal(b->r0, p->blocks[bi - 1].r1);
            assert_int_equal(b->first_piece, p->blocks[bi - 1].end_piece);
        }
        if (b->r0 % s->align) fail_msg("block %d starts at row %d, align %d", bi, b->r0, s->align);
        assert_true(b->r1 > b->r0);
        if (b->r1 - b->r0 > max_rows) max_rows = b->r1 - b->r0;
        assert_true(b->end_piece > b->first_piece); /* no block of padding alone */
        for (int32_t r = b->r0; r < b->r1; r++)
            in_block[r]++;
        const bool prefix_block = p->pieces[b->first_piece].a < s->prefix;
        assert_int_equal(b->shared, prefix_block ? 0 : s->prefix);
        if (b->shared + cached > max_shared) max_shared = b->shared + cached;
        assert_true(block_scratch_floats(p, b) <= p->scratch_floats);
        for (int32_t pi = b->first_piece; pi < b->end_piece; pi++) {
            const attn_piece *pc = &p->pieces[pi];
            /* inside the block, and within the block_rows rows whose
             * shared-key scores one product computes */
            assert_true(pc->a >= b->r0 && pc->b <= b->r1 && pc->a < pc->b);
            assert_true(pc->b - b->r0 <= br);
            if (pi > b->first_piece) assert_true(pc->a >= p->pieces[pi - 1].b);
            if (pc->b - pc->own0 > max_own_keys) max_own_keys = pc->b - pc->own0;
            if (pc->a < s->prefix) {
                /* a prefix piece: prefix rows only, causal from row 0 */
                assert_true(prefix_block && pc->b <= s->prefix && pc->own0 == 0);
            } else {
                /* one segment's rows, own keys from its first row */
                const int32_t g = seg[pc->a];
                assert_true(g != NO_SEGMENT && !prefix_block);
                assert_true(seg[pc->b - 1] == g && pc->own0 == s->begin[g]);
            }
            for (int32_t r = pc->a; r < pc->b; r++)
                in_piece[r]++;
        }
    }
    assert_int_equal(p->max_shared, max_shared);
    assert_int_equal(p->max_rows, max_rows);
    assert_int_equal(p->max_own_keys, max_own_keys);
    for (int32_t r = 0; r < t; r++) {
        if (in_block[r] != 1) fail_msg("row %d is in %d blocks", r, in_block[r]);
        const bool real = r < s->prefix || seg[r] != NO_SEGMENT;
        if (in_piece[r] != (real ? 1 : 0))
            fail_msg("%s row %d is in %d pieces", real ? "a" : "padding", r, in_piece[r]);
    }
}

/* How the segments were grouped and cut: a segment longer than block_rows
 * is cut into pieces of block_rows rows (the last one shorter), each its own
 * block; shorter ones are grouped whole, greedily, while the group spans at
 * most block_rows rows. Prefix pieces: block_rows rows each, the last shorter. */
static void check_grouping(const attn_plan *p, const layout_spec *s)
{
    const int32_t br = p->geo.block_rows;
    int32_t pi = 0;
    for (int32_t a = 0; a < s->prefix; a += br, pi++) {
        assert_int_equal(p->pieces[pi].a, a);
        assert_int_equal(p->pieces[pi].b, a + br < s->prefix ? a + br : s->prefix);
    }
    for (int32_t bi = 0; bi < p->n_blocks; bi++) {
        const attn_block *b = &p->blocks[bi];
        const attn_piece *first = &p->pieces[b->first_piece];
        if (first->a < s->prefix) continue;
        int32_t g = 0;
        while (g < s->n_segs && s->begin[g] != first->own0)
            g++;
        assert_true(g < s->n_segs);
        const int32_t len = s->end[g] - s->begin[g];
        if (len > br) {
            assert_int_equal(b->end_piece - b->first_piece, 1);
            const int32_t k = (first->a - s->begin[g]) / br;
            assert_int_equal(first->a, s->begin[g] + k * br);
            assert_int_equal(first->b, first->a + br < s->end[g] ? first->a + br : s->end[g]);
            continue;
        }
        /* a group: whole short segments g .. g + n - 1 */
        const int32_t n = b->end_piece - b->first_piece;
        for (int32_t i = 0; i < n; i++) {
            const attn_piece *pc = &p->pieces[b->first_piece + i];
            assert_true(pc->a == s->begin[g + i] && pc->b == s->end[g + i]);
            assert_true(s->end[g + i] - s->begin[g + i] <= br);
        }
        assert_true(s->end[g + n - 1] - s->begin[g] <= br);
        const int32_t next = g + n;
        if (next < s->n_segs) /* the next one did not fit */
            assert_true(s->end[next] - s->begin[g] > br || s->end[next] - s->begin[next] > br);
    }
}

/* attention.h's visibility: may batch row r see batch row c? */
static bool visible(const layout_spec *s, const int32_t *seg, int32_t r, int32_t c)
{
    if (r < s->prefix) return c <= r;
    if (seg[r] == NO_SEGMENT) return false;
    return c < s->prefix || (c >= s->begin[seg[r]] && c <= r);
}

static void check_dense_plan(const attn_plan *p, const layout_spec *s, int32_t cached)
{
    static int32_t seg[MAX_ROWS];
    const int32_t br = p->geo.block_rows, t = s->n_rows;
    segment_of_rows(s, seg);
    assert_non_null(p->mask);
    assert_int_equal(p->n_pieces, 0);
    assert_int_equal(p->n_blocks, (t + br - 1) / br);
    for (int32_t bi = 0; bi < p->n_blocks; bi++) {
        assert_int_equal(p->blocks[bi].r0, bi * br);
        assert_int_equal(p->blocks[bi].r1, (bi + 1) * br < t ? (bi + 1) * br : t);
    }
    assert_int_equal(p->max_shared, t + cached);
    assert_true(p->scratch_floats >= (size_t)(cached + t) * (1 + HEAD_DIM));
    for (int32_t r = 0; r < t; r++)
        for (int32_t c = 0; c < t; c++)
            if (p->mask[(size_t)r * t + c] != visible(s, seg, r, c))
                fail_msg("mask[%d][%d] = %d", r, c, p->mask[(size_t)r * t + c]);
}

static void check_both_modes(const layout_spec *s, int32_t cached)
{
    attn_plan *p = plan_of(s, false, cached);
    check_segment_plan(p, s, cached);
    check_grouping(p, s);
    attn_plan_free(p);
    if (s->n_rows <= 4096) {
        p = plan_of(s, true, cached);
        check_dense_plan(p, s, cached);
        attn_plan_free(p);
    }
}

static uint64_t next_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ull + 1442695040888963407ull;
    return *state >> 33;
}

/* Edge cases around block_rows (block_rows_for: 128 at aligns 1 and 2, 132 at 12, 144 at 48). */
static void test_edges_of_a_block(void **state)
{
    (void)state;
    const int32_t aligns[] = {1, 2, 12, 48};
    for (size_t pi = 0; pi < sizeof aligns / sizeof *aligns; pi++) {
        const int32_t p = aligns[pi], br = block_rows_for(p);
        layout_spec s;
        const int32_t one[] = {1};
        const int32_t lens[][3] = {
            {br, 0, 0},     {br + 1, 0, 0},      {2 * br, 0, 0},          {2 * br + 1, 0, 0},
            {br - p, 1, 0}, {br / 2, br / 2, 0}, {br / 2, br / 2 + 1, 0}, {1, br, 1},
            {br + 1, 1, br}};
        for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
            int32_t n = lens[k][1] ? (lens[k][2] ? 3 : 2) : 1;
            make_layout(&s, p, 0, lens[k], n); /* independent sequences, an extend */
            check_both_modes(&s, 0);
            check_both_modes(&s, 37);
            make_layout(&s, p, br, lens[k], n); /* a prefix of exactly one block */
            check_both_modes(&s, 0);
            make_layout(&s, p, br + 1, lens[k], n); /* one row more */
            check_both_modes(&s, 0);
        }
        make_layout(&s, p, 1, one, 1); /* one prefix row, one segment row */
        check_both_modes(&s, 0);
        make_layout(&s, p, 3 * br + 5, one, 0); /* a prefix alone: a causal sequence */
        check_both_modes(&s, 0);
    }
}

/* Random layouts of the three algorithms' shapes at several aligns: a
 * packed request (prefix + items), an extend batch (cached prefix, items
 * from row 0), and independent sequences. */
static void test_random_layouts(void **state)
{
    (void)state;
    uint64_t rng = 42;
    const int32_t aligns[] = {1, 2, 4, 12, 48};
    int32_t lens[MAX_SEGS];
    for (int round = 0; round < 300; round++) {
        const int32_t p = aligns[round % 5];
        const int32_t n = 1 + (int32_t)(next_rand(&rng) % 60);
        /* mostly short items, some longer than a block */
        const int32_t longest = next_rand(&rng) % 4 == 0 ? 1000 : 40;
        for (int32_t i = 0; i < n; i++)
            lens[i] = 1 + (int32_t)(next_rand(&rng) % (uint64_t)longest);
        const int32_t prefix = (int32_t)(next_rand(&rng) % 900);
        layout_spec s;
        switch (round % 3) {
        case 0: /* packed */
            make_layout(&s, p, prefix, lens, n);
            check_both_modes(&s, 0);
            break;
        case 1: /* extend */
            make_layout(&s, p, 0, lens, n);
            check_both_modes(&s, prefix + 1);
            break;
        default: /* independent */
            make_layout(&s, p, 0, lens, n);
            check_both_modes(&s, 0);
        }
    }
}

/* Each inconsistency is refused with LMS_ERR_INTERNAL and no plan. */
static void test_bad_layouts_are_refused(void **state)
{
    (void)state;
    const attn_geometry geo = {4, 2, HEAD_DIM, 384, NULL, NULL, NULL};
    const struct {
        int32_t n_rows, prefix, n_segs;
        int32_t begin[2], end[2];
        const char *needle;
    } cases[] = {
        {0, 0, 0, {0}, {0}, "bad layout sizes"},    {4, 5, 0, {0}, {0}, "bad layout sizes"},
        {4, -1, 0, {0}, {0}, "bad layout sizes"},   {4, 0, -1, {0}, {0}, "bad layout sizes"},
        {8, 4, 1, {2, 0}, {6, 0}, "bad segment 0"}, /* starts inside the prefix */
        {8, 0, 1, {3, 0}, {3, 0}, "bad segment 0"}, /* empty */
        {8, 0, 1, {3, 0}, {9, 0}, "bad segment 0"}, /* past the batch */
        {8, 0, 2, {0, 3}, {4, 6}, "bad segment 1"}, /* overlaps the one before */
        {8, 0, 2, {4, 0}, {6, 2}, "bad segment 1"}, /* out of order */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        attn_layout l = {.n_rows = cases[i].n_rows,
                         .prefix_rows = cases[i].prefix,
                         .n_segments = cases[i].n_segs,
                         .seg_begin = cases[i].begin,
                         .seg_end = cases[i].end};
        for (int dense = 0; dense < 2; dense++) {
            l.dense_mask = dense;
            attn_plan *p = (attn_plan *)1;
            lms_error err = {0};
            assert_int_equal(attn_plan_create(&l, &geo, 0, &p, &err), LMS_ERR_INTERNAL);
            assert_null(p);
            if (!strstr(err.msg, cases[i].needle))
                fail_msg("case %zu: \"%s\", expected \"%s\"", i, err.msg, cases[i].needle);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edges_of_a_block),
        cmocka_unit_test(test_random_layouts),
        cmocka_unit_test(test_bad_layouts_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
