/*
 * mf_buf.c — the growable little-endian byte buffer (see mf_buf.h).
 */
#include "mf_buf.h"

#include <stdlib.h>
#include <string.h>

void mf_buf_put(mf_buf *b, const void *data, size_t n)
{
    if (b->failed || n == 0) return;
    if (n > b->cap - b->len) {
        size_t cap = b->cap ? b->cap : 256;
        while (n > cap - b->len) {
            if (cap > SIZE_MAX / 2) {
                b->failed = 1;
                return;
            }
            cap *= 2;
        }
        uint8_t *grown = realloc(b->data, cap);
        if (!grown) {
            b->failed = 1;
            return;
        }
        b->data = grown;
        b->cap = cap;
    }
    memcpy(b->data + b->len, data, n);
    b->len += n;
}

/* The low `bytes` bytes of v, least significant first. */
static void put_le(mf_buf *b, uint64_t v, int bytes)
{
    uint8_t le[8];
    for (int i = 0; i < bytes; i++)
        le[i] = (uint8_t)(v >> (8 * i));
    mf_buf_put(b, le, (size_t)bytes);
}

void mf_buf_u8(mf_buf *b, uint8_t v)
{
    mf_buf_put(b, &v, 1);
}

void mf_buf_u16(mf_buf *b, uint16_t v)
{
    put_le(b, v, 2);
}

void mf_buf_u32(mf_buf *b, uint32_t v)
{
    put_le(b, v, 4);
}

void mf_buf_u64(mf_buf *b, uint64_t v)
{
    put_le(b, v, 8);
}

void mf_buf_f32(mf_buf *b, float v)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    put_le(b, bits, 4);
}

void mf_buf_pad(mf_buf *b, size_t alignment, uint8_t byte)
{
    while (!b->failed && b->len % alignment)
        mf_buf_u8(b, byte);
}

void mf_buf_free(mf_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}
