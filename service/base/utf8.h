/*
 * utf8.h — the one test of well-formed UTF-8 (RFC 3629's table: no overlong
 * form, no surrogate, nothing above U+10FFFF) that the wire check, the JSON
 * reader and the log writer share.
 */
#ifndef LMSCORED_UTF8_H
#define LMSCORED_UTF8_H

#include <stddef.h>

/* The length of the well-formed UTF-8 sequence at s (n bytes readable, n >=
 * 1): 1 for ASCII, 2 to 4 for the longer forms, 0 when s starts none. */
size_t utf8_sequence_len(const unsigned char *s, size_t n);

#endif
