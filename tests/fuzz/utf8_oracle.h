/*
 * utf8_oracle.h — the fuzzers' own check of a decoded string, written apart
 * from the daemon's (proto_wire.c, json_reader.c) so that the two can
 * disagree: well-formed UTF-8 (RFC 3629), no stray continuation, no
 * overlong form, no surrogate, nothing above U+10FFFF.
 */
#ifndef LMSCORE_FUZZ_UTF8_ORACLE_H
#define LMSCORE_FUZZ_UTF8_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

/* s up to its NUL. */
static inline bool utf8_valid(const unsigned char *s)
{
    while (*s) {
        unsigned c = *s++, n, min;
        uint32_t cp;
        if (c < 0x80) continue;
        if ((c & 0xe0) == 0xc0)
            n = 1, min = 0x80, cp = c & 0x1f;
        else if ((c & 0xf0) == 0xe0)
            n = 2, min = 0x800, cp = c & 0x0f;
        else if ((c & 0xf8) == 0xf0)
            n = 3, min = 0x10000, cp = c & 0x07;
        else
            return false;
        for (unsigned i = 0; i < n; i++, s++) {
            if ((*s & 0xc0) != 0x80) return false;
            cp = cp << 6 | (*s & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    }
    return true;
}

#endif
