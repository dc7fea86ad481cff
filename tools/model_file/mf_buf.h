/*
 * mf_buf.h — a growable byte buffer for the little-endian encodings of model
 * files (GGUF, safetensors).
 *
 * An allocation failure is sticky: later appends do nothing and `failed`
 * says the contents are incomplete, so a writer checks once, at the end.
 */
#ifndef MF_BUF_H
#define MF_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint8_t *data;
    size_t len, cap;
    int failed;
} mf_buf;

void mf_buf_put(mf_buf *b, const void *data, size_t n);
void mf_buf_u8(mf_buf *b, uint8_t v);
void mf_buf_u16(mf_buf *b, uint16_t v);
void mf_buf_u32(mf_buf *b, uint32_t v);
void mf_buf_u64(mf_buf *b, uint64_t v);
void mf_buf_f32(mf_buf *b, float v); /* its IEEE bits */
/* Appends `byte` up to a multiple of alignment bytes. */
void mf_buf_pad(mf_buf *b, size_t alignment, uint8_t byte);
void mf_buf_free(mf_buf *b);

#endif
