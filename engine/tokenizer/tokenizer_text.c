/*
 * tokenizer_text.c — text-level helpers of the tokenizer: UTF-8 decoding and
 * the WHATWG replacement of invalid sequences, ECMAScript whitespace
 * trimming (added tokens' lstrip/rstrip), the normalizers (NFC through
 * utf8proc, Prepend, Replace) and GPT-2's byte <-> code point map.
 */
#include <stdlib.h>
#include <string.h>

#include <utf8proc.h>

#include "tokenizer_impl.h"

bool tok_buf_put(tok_buf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = (b->cap + n + 1) * 2;
        char *grown = realloc(b->buf, cap);
        if (!grown) return false;
        b->buf = grown;
        b->cap = cap;
    }
    memcpy(b->buf + b->len, s, n);
    b->len += n;
    b->buf[b->len] = '\0';
    return true;
}

#define REPLACEMENT_LEN 3 /* U+FFFD in UTF-8 */
static const char replacement[REPLACEMENT_LEN] = {'\xef', '\xbf', '\xbd'};

/* Length of the well-formed sequence at s, or minus the length of the
 * maximal subpart of an ill-formed one (Unicode 3.9, "U+FFFD substitution of
 * maximal subparts", which the WHATWG decoder and so the reference follow). */
static long utf8_sequence(const unsigned char *s, size_t len)
{
    unsigned char b = s[0];
    if (b < 0x80) return 1;
    size_t need;
    unsigned char lo = 0x80, hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
        need = 1;
    } else if (b >= 0xe0 && b <= 0xef) {
        need = 2;
        if (b == 0xe0) lo = 0xa0;
        if (b == 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
        need = 3;
        if (b == 0xf0) lo = 0x90;
        if (b == 0xf4) hi = 0x8f;
    } else {
        return -1;
    }
    for (size_t k = 1; k <= need; k++) {
        if (k >= len || s[k] < lo || s[k] > hi) return -(long)k;
        lo = 0x80;
        hi = 0xbf;
    }
    return (long)need + 1;
}

size_t tok_utf8_valid_len(const char *text, size_t len, bool *valid)
{
    const unsigned char *s = (const unsigned char *)text;
    size_t out = 0;
    *valid = true;
    for (size_t i = 0; i < len;) {
        if (s[i] < 0x80) { /* ASCII runs dominate */
            i++;
            out++;
            continue;
        }
        long n = utf8_sequence(s + i, len - i);
        if (n > 0) {
            i += (size_t)n;
            out += (size_t)n;
        } else {
            i += (size_t)-n;
            out += REPLACEMENT_LEN;
            *valid = false;
        }
    }
    return out;
}

void tok_utf8_replace_invalid(const char *text, size_t len, char *out)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        long n = utf8_sequence(s + i, len - i);
        if (n > 0) {
            memcpy(out, s + i, (size_t)n);
            out += n;
            i += (size_t)n;
        } else {
            memcpy(out, replacement, REPLACEMENT_LEN);
            out += REPLACEMENT_LEN;
            i += (size_t)-n;
        }
    }
}

size_t tok_utf8_next(const char *text, size_t len, uint32_t *cp)
{
    const unsigned char *s = (const unsigned char *)text;
    if (s[0] < 0x80 || len < 2) {
        *cp = s[0];
        return 1;
    }
    if (s[0] < 0xe0) {
        *cp = ((uint32_t)(s[0] & 0x1f) << 6) | (s[1] & 0x3f);
        return 2;
    }
    if (s[0] < 0xf0 || len < 4) {
        *cp = ((uint32_t)(s[0] & 0x0f) << 12) | ((uint32_t)(s[1] & 0x3f) << 6) | (s[2] & 0x3f);
        return 3;
    }
    *cp = ((uint32_t)(s[0] & 0x07) << 18) | ((uint32_t)(s[1] & 0x3f) << 12) |
          ((uint32_t)(s[2] & 0x3f) << 6) | (s[3] & 0x3f);
    return 4;
}

/* ECMAScript's WhiteSpace and LineTerminator (what trimStart/trimEnd and
 * the regex class \s accept): the Zs category plus TAB..CR, LS, PS and BOM. */
static bool is_js_space(uint32_t cp)
{
    if (cp < 0x80) return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20;
    return cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
           cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000 || cp == 0xfeff;
}

size_t tok_js_trim_start(const char *text, size_t len)
{
    size_t i = 0;
    while (i < len) {
        uint32_t cp;
        size_t n = tok_utf8_next(text + i, len - i, &cp);
        if (!is_js_space(cp)) break;
        i += n;
    }
    return i;
}

size_t tok_js_trim_end(const char *text, size_t len)
{
    while (len > 0) {
        size_t start = len - 1;
        while (start > 0 && ((unsigned char)text[start] & 0xc0) == 0x80)
            start--;
        uint32_t cp;
        tok_utf8_next(text + start, len - start, &cp);
        if (!is_js_space(cp)) break;
        len = start;
    }
    return len;
}

/* True when NFC leaves text unchanged for certain without running it: every
 * code point is below U+0300 (nothing there decomposes or combines with what
 * precedes it) or a CJK unified ideograph (U+4E00..U+9FFF, likewise). */
static bool nfc_certainly_stable(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len;) {
        if (s[i] < 0xcc) { /* lead bytes below 0xCC encode code points < U+0300 */
            i += s[i] < 0x80 ? 1 : 2;
            continue;
        }
        if (s[i] >= 0xe4 && s[i] <= 0xe9 && i + 2 < len) { /* U+4000..U+9FFF */
            uint32_t cp;
            i += tok_utf8_next(text + i, len - i, &cp);
            if (cp < 0x4e00) return false;
            continue;
        }
        return false;
    }
    return true;
}

static lms_status nfc(const char *text, size_t len, char **out, size_t *out_len, lms_error *err)
{
    utf8proc_uint8_t *dst = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len, &dst,
                                      UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0) {
        free(dst);
        return lms_fail(err, n == UTF8PROC_ERROR_NOMEM ? LMS_ERR_NOMEM : LMS_ERR_INTERNAL, NULL,
                        NULL, "tokenizer: NFC normalization failed: %s", utf8proc_errmsg(n));
    }
    *out = (char *)dst;
    *out_len = (size_t)n;
    return LMS_OK;
}

static lms_status replace_all(const tok_norm_step *step, const char *text, size_t len, char **out,
                              size_t *out_len, lms_error *err)
{
    size_t count = 0;
    for (size_t i = 0; i + step->from_len <= len;) {
        if (!memcmp(text + i, step->from, step->from_len)) {
            count++;
            i += step->from_len;
        } else {
            i++;
        }
    }
    size_t cap = len - count * step->from_len + count * step->to_len;
    char *buf = malloc(cap + 1);
    if (!buf) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    size_t n = 0;
    for (size_t i = 0; i < len;) {
        if (i + step->from_len <= len && !memcmp(text + i, step->from, step->from_len)) {
            memcpy(buf + n, step->to, step->to_len);
            n += step->to_len;
            i += step->from_len;
        } else {
            buf[n++] = text[i++];
        }
    }
    *out = buf;
    *out_len = n;
    return LMS_OK;
}

static lms_status apply_step(const tok_norm_step *step, const char *text, size_t len, char **out,
                             size_t *out_len, lms_error *err)
{
    switch (step->kind) {
    case TOK_NORM_NFC:
        if (!nfc_certainly_stable(text, len)) return nfc(text, len, out, out_len, err);
        break;
    case TOK_NORM_PREPEND: {
        char *buf = malloc(step->to_len + len + 1);
        if (!buf) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        memcpy(buf, step->to, step->to_len);
        memcpy(buf + step->to_len, text, len);
        *out = buf;
        *out_len = step->to_len + len;
        return LMS_OK;
    }
    case TOK_NORM_REPLACE:
        return replace_all(step, text, len, out, out_len, err);
    }
    *out = malloc(len + 1);
    if (!*out) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    memcpy(*out, text, len);
    *out_len = len;
    return LMS_OK;
}

lms_status tok_normalize(const lms_tokenizer *tok, const char *text, size_t len, char **out,
                         size_t *out_len, lms_error *err)
{
    char *cur = NULL;
    size_t cur_len = len;
    for (int k = 0; k < tok->n_norm; k++) {
        char *next = NULL;
        size_t next_len = 0;
        lms_status st = apply_step(&tok->norm[k], cur ? cur : text, cur_len, &next, &next_len, err);
        free(cur);
        if (st != LMS_OK) return st;
        cur = next;
        cur_len = next_len;
    }
    if (!cur) {
        cur = malloc(len + 1);
        if (!cur) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
        memcpy(cur, text, len);
    }
    *out = cur;
    *out_len = cur_len;
    return LMS_OK;
}

/* GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves,
 * the other 68 (0x00-0x20, 0x7F-0xA0, 0xAD) take code points 256.. in byte
 * order. */
uint32_t tok_byte_to_cp(uint8_t b)
{
    if (b <= 0x20) return 256 + b;
    if (b >= 0x7f && b <= 0xa0) return 256 + 33 + (b - 0x7f);
    if (b == 0xad) return 256 + 67;
    return b;
}

int tok_cp_to_byte(uint32_t cp)
{
    if (cp < 256) return tok_byte_to_cp((uint8_t)cp) == cp ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(cp - 256 - 33 + 0x7f);
    if (cp == 256 + 67) return 0xad;
    return -1;
}
