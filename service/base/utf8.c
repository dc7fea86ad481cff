/*
 * utf8.c — well-formed UTF-8 (see utf8.h).
 */
#include "utf8.h"

size_t utf8_sequence_len(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xbf; /* the second byte's range */
    if (c < 0x80) return 1;
    if (c >= 0xc2 && c <= 0xdf) {
        len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
        len = 3;
        if (c == 0xe0) lo = 0xa0; /* no overlong form */
        if (c == 0xed) hi = 0x9f; /* no surrogate */
    } else if (c >= 0xf0 && c <= 0xf4) {
        len = 4;
        if (c == 0xf0) lo = 0x90; /* no overlong form */
        if (c == 0xf4) hi = 0x8f; /* nothing above U+10FFFF */
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    return len;
}
