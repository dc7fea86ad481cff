/*
 * json_reader.c — the strict pull reader (see json_reader.h): RFC 8259's
 * grammar, strings decoded and checked as UTF-8 (RFC 3629: no overlong
 * form, no surrogate, nothing above U+10FFFF) without U+0000.
 */
#include "json_reader.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "utf8.h"

void json_reader_init(json_reader *r, const char *text, size_t len)
{
    memset(r, 0, sizeof *r);
    r->text = r->at = text;
    r->end = text + len;
}

bool json_failed(const json_reader *r)
{
    return r->err.status != LMS_OK;
}

static bool vfail(json_reader *r, const char *reason, const char *field, const char *fmt,
                  va_list ap)
{
    if (json_failed(r)) return false;
    char msg[sizeof r->err.msg];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (field && field[0])
        lms_fail(&r->err, LMS_ERR_INVALID_ARGUMENT, reason, field, "%s: %s", field, msg);
    else
        lms_fail(&r->err, LMS_ERR_INVALID_ARGUMENT, reason, NULL, "%s", msg);
    return false;
}

bool json_fail(json_reader *r, const char *reason, const char *field, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfail(r, reason, field, fmt, ap);
    va_end(ap);
    return false;
}

void json_name_field(json_reader *r, const char *fmt, ...)
{
    if (!json_failed(r) || r->err.field[0]) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->err.field, sizeof r->err.field, fmt, ap);
    va_end(ap);
    char msg[sizeof r->err.field + 2 + sizeof r->err.msg];
    snprintf(msg, sizeof msg, "%s: %s", r->err.field, r->err.msg);
    msg[sizeof r->err.msg - 1] = '\0'; /* cut to fit */
    memcpy(r->err.msg, msg, sizeof r->err.msg);
}

/* A syntax error at the current position. */
static bool syntax(json_reader *r, const char *field, const char *expected)
{
    if (r->at >= r->end)
        return json_fail(r, "malformed_request", field,
                         "the body is not JSON: %s expected, the text ended (byte %zu)", expected,
                         (size_t)(r->at - r->text));
    return json_fail(r, "malformed_request", field, "the body is not JSON: %s expected at byte %zu",
                     expected, (size_t)(r->at - r->text));
}

static void skip_space(json_reader *r)
{
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r'))
        r->at++;
}

static bool at_literal(const json_reader *r, const char *word)
{
    size_t n = strlen(word);
    return (size_t)(r->end - r->at) >= n && memcmp(r->at, word, n) == 0;
}

static bool literal(json_reader *r, const char *word)
{
    if (!at_literal(r, word)) return false;
    r->at += strlen(word);
    return true;
}

json_kind json_peek(json_reader *r)
{
    if (json_failed(r)) return JSON_INVALID;
    skip_space(r);
    if (r->at < r->end) switch (*r->at) {
        case '{':
            return JSON_OBJECT;
        case '[':
            return JSON_ARRAY;
        case '"':
            return JSON_STRING;
        case 't':
        case 'f':
            if (at_literal(r, "true") || at_literal(r, "false")) return JSON_BOOL;
            break;
        case 'n':
            if (at_literal(r, "null")) return JSON_NULL;
            break;
        default:
            if (*r->at == '-' || (*r->at >= '0' && *r->at <= '9')) return JSON_NUMBER;
        }
    syntax(r, NULL, "a value");
    return JSON_INVALID;
}

static const char *type_name(json_kind t)
{
    static const char *const names[] = {"nothing",  "null",     "a boolean", "a number",
                                        "a string", "an array", "an object"};
    return names[t];
}

/* True when the next value is of type want; else fails naming field. */
static bool expect(json_reader *r, json_kind want, const char *field)
{
    json_kind t = json_peek(r);
    if (t == want) return true;
    if (t != JSON_INVALID)
        json_fail(r, "malformed_request", field, "expected %s, found %s", type_name(want),
                  type_name(t));
    return false;
}

static bool open_container(json_reader *r, json_kind type, const char *field)
{
    if (!expect(r, type, field)) return false;
    if (r->depth >= JSON_MAX_DEPTH)
        return json_fail(r, "malformed_request", field,
                         "the JSON nests deeper than %d arrays and objects", JSON_MAX_DEPTH);
    r->at++;
    r->depth++;
    r->first = true;
    return true;
}

/* Before a member or an element: the closing bracket (false, consumed) or
 * the comma that separates it from the one before. */
static bool next_member(json_reader *r, char close)
{
    if (json_failed(r)) return false;
    skip_space(r);
    if (r->at < r->end && *r->at == close) {
        r->at++;
        r->depth--;
        r->first = false;
        return false;
    }
    if (!r->first) {
        if (r->at >= r->end || *r->at != ',')
            return syntax(r, NULL, close == '}' ? "',' or '}'" : "',' or ']'");
        r->at++;
        skip_space(r);
    }
    r->first = false;
    return true;
}

bool json_object_begin(json_reader *r, const char *field)
{
    return open_container(r, JSON_OBJECT, field);
}

bool json_array_begin(json_reader *r, const char *field)
{
    return open_container(r, JSON_ARRAY, field);
}

bool json_array_next(json_reader *r)
{
    return next_member(r, ']');
}

bool json_object_next(json_reader *r, char key[JSON_KEY_MAX])
{
    if (!next_member(r, '}')) return false;
    if (r->at >= r->end || *r->at != '"') return syntax(r, NULL, "a member name");
    size_t bound;
    if (!json_string_bound(r, NULL, &bound)) return false;
    key[0] = '\0';
    if (!json_read_string(r, NULL, bound <= JSON_KEY_MAX ? key : NULL, NULL)) return false;
    skip_space(r);
    if (r->at >= r->end || *r->at != ':') return syntax(r, NULL, "':'");
    r->at++;
    return true;
}

/* The end of the string starting at r->at (its opening quote), past the
 * closing quote; NULL when it has none. */
static const char *string_end(const json_reader *r)
{
    for (const char *p = r->at + 1; p < r->end; p++) {
        if (*p == '"') return p + 1;
        if (*p == '\\') p++;
    }
    return NULL;
}

bool json_string_bound(json_reader *r, const char *field, size_t *bound)
{
    if (!expect(r, JSON_STRING, field)) return false;
    const char *end = string_end(r);
    if (!end) {
        r->at = r->end;
        return syntax(r, field, "the string's closing '\"'");
    }
    *bound = (size_t)(end - r->at) - 1; /* the quotes less one, for the NUL */
    return true;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The four hex digits at p (end: the text's end); -1 when they are not. */
static int32_t hex4(const char *p, const char *end)
{
    if (end - p < 4) return -1;
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex_digit(p[i]);
        if (d < 0) return -1;
        v = v << 4 | d;
    }
    return v;
}

static size_t put_utf8(char *out, uint32_t cp)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xc0 | cp >> 6);
        out[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xe0 | cp >> 12);
        out[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        out[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | cp >> 18);
    out[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    out[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    out[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

bool json_read_string(json_reader *r, const char *field, char *out, size_t *len)
{
    size_t bound;
    if (!json_string_bound(r, field, &bound)) return false;
    const char *p = r->at + 1;
    size_t n = 0;
    for (;;) {
        unsigned char c = (unsigned char)*p;
        if (c == '"') break;
        if (c < 0x20) {
            r->at = p;
            return syntax(r, field, "a control character escaped as \\u00XX");
        }
        if (c >= 0x80) {
            size_t seq = utf8_sequence_len((const unsigned char *)p, (size_t)(r->end - p));
            if (!seq)
                return json_fail(r, "invalid_utf8", field,
                                 "the text is not valid UTF-8 (byte %zu of the body)",
                                 (size_t)(p - r->text));
            if (out) memcpy(out + n, p, seq);
            n += seq;
            p += seq;
            continue;
        }
        if (c != '\\') {
            if (out) out[n] = (char)c;
            n++;
            p++;
            continue;
        }
        const char *escape = p;
        char e = p[1]; /* the closing quote follows, so p[1] is in the text */
        p += 2;
        const char *simple = strchr("\"\\/bfnrt", e);
        if (e && simple) {
            if (out) out[n] = "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
            n++;
            continue;
        }
        int32_t cp = e == 'u' ? hex4(p, r->end) : -1;
        if (cp < 0) {
            r->at = escape;
            return syntax(r, field,
                          "an escape (\\\", \\\\, \\/, \\b, \\f, \\n, \\r, \\t, \\uXXXX)");
        }
        p += 4;
        if (cp >= 0xd800 && cp <= 0xdbff) {
            int32_t low = r->end - p >= 6 && p[0] == '\\' && p[1] == 'u' ? hex4(p + 2, r->end) : -1;
            if (low < 0xdc00 || low > 0xdfff)
                return json_fail(r, "invalid_utf8", field,
                                 "the text is not valid UTF-8: \\u%04X without its low surrogate "
                                 "(byte %zu of the body)",
                                 (unsigned)cp, (size_t)(escape - r->text));
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            p += 6;
        } else if (cp >= 0xdc00 && cp <= 0xdfff) {
            return json_fail(r, "invalid_utf8", field,
                             "the text is not valid UTF-8: a lone low surrogate \\u%04X (byte %zu "
                             "of the body)",
                             (unsigned)cp, (size_t)(escape - r->text));
        } else if (cp == 0) {
            return json_fail(r, "nul_in_text", field,
                             "the text holds a NUL character (\\u0000, byte %zu of the body)",
                             (size_t)(escape - r->text));
        }
        char utf8[4];
        size_t seq = put_utf8(utf8, (uint32_t)cp);
        if (out) memcpy(out + n, utf8, seq);
        n += seq;
    }
    if (out) out[n] = '\0';
    if (len) *len = n;
    r->at = p + 1;
    return true;
}

/* Consumes a number per RFC 8259's grammar; *integer tells whether it had
 * neither fraction nor exponent. */
static bool number(json_reader *r, const char *field, bool *integer)
{
    const char *p = r->at;
    if (p < r->end && *p == '-') p++;
    if (p < r->end && *p == '0')
        p++;
    else if (p < r->end && *p >= '1' && *p <= '9')
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    else {
        r->at = p;
        return syntax(r, field, "a digit");
    }
    *integer = true;
    if (p < r->end && *p == '.') {
        *integer = false;
        if (++p >= r->end || *p < '0' || *p > '9') {
            r->at = p;
            return syntax(r, field, "a digit after '.'");
        }
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    if (p < r->end && (*p == 'e' || *p == 'E')) {
        *integer = false;
        p++;
        if (p < r->end && (*p == '+' || *p == '-')) p++;
        if (p >= r->end || *p < '0' || *p > '9') {
            r->at = p;
            return syntax(r, field, "a digit in the exponent");
        }
        while (p < r->end && *p >= '0' && *p <= '9')
            p++;
    }
    r->at = p;
    return true;
}

/* The magnitude of the number text [p, end) when it is integral (JSON
 * Schema's integer: 2, 2.0, 2e0, 20e-1), saturated above 2^62, which is
 * out of any range; false when it has a fraction. */
static bool integral_magnitude(const char *p, const char *end, uint64_t *out)
{
    const uint64_t cap = (uint64_t)1 << 62;
    const char *digits = p, *dot = NULL, *e = end;
    for (const char *q = p; q < end; q++) {
        if (*q == '.') dot = q;
        if (*q == 'e' || *q == 'E') {
            e = q;
            break;
        }
    }
    /* the exponent, saturated: past +-100000 every nonzero value is out of
     * range or fractional */
    long exp10 = 0;
    if (e < end) {
        const char *q = e + 1;
        bool neg = *q == '-';
        if (*q == '+' || *q == '-') q++;
        for (; q < end; q++)
            exp10 = exp10 > 100000 ? exp10 : exp10 * 10 + (*q - '0');
        if (neg) exp10 = -exp10;
    }
    /* digits d1 d2 ... dn (the point removed) times 10^(exp10 - fraction) */
    size_t n_digits = 0, last_nonzero = 0, first_nonzero = 0;
    bool any = false;
    for (const char *q = digits; q < e; q++) {
        if (q == dot) continue;
        n_digits++;
        if (*q != '0') {
            if (!any) first_nonzero = n_digits;
            any = true;
            last_nonzero = n_digits;
        }
    }
    *out = 0;
    if (!any) return true; /* zero, however written */
    long shift = exp10 - (dot ? (long)(e - dot - 1) : 0);
    /* the digits after the point, once shifted, must all be zero */
    if (shift < 0 && (long)(n_digits - last_nonzero) < -shift) return false;
    if (shift > 0 && (long)(n_digits - first_nonzero) + shift > 19) {
        *out = cap + 1;
        return true;
    }
    uint64_t v = 0;
    size_t keep = shift < 0 ? n_digits - (size_t)-shift : n_digits, i = 0;
    for (const char *q = digits; q < e && i < keep; q++) {
        if (q == dot) continue;
        i++;
        v = v > cap ? v : v * 10 + (uint64_t)(*q - '0');
    }
    for (long k = 0; k < shift; k++)
        v = v > cap ? v : v * 10;
    *out = v;
    return true;
}

bool json_read_int(json_reader *r, const char *field, int64_t min, int64_t max, int64_t *out)
{
    if (!expect(r, JSON_NUMBER, field)) return false;
    const char *start = r->at;
    bool integer;
    if (!number(r, field, &integer)) return false;
    bool negative = *start == '-';
    uint64_t v;
    if (!integral_magnitude(start + negative, r->at, &v))
        return json_fail(r, "malformed_request", field, "expected an integer, found %.*s",
                         (int)(r->at - start < 32 ? r->at - start : 32), start);
    bool in_range = negative ? v <= (uint64_t)1 << 62 && -(int64_t)v >= min
                             : v <= (uint64_t)1 << 62 && (int64_t)v <= max && (int64_t)v >= min;
    if (!in_range)
        return json_fail(r, "malformed_request", field, "%.*s is out of range [%lld, %lld]",
                         (int)(r->at - start < 32 ? r->at - start : 32), start, (long long)min,
                         (long long)max);
    *out = negative ? -(int64_t)v : (int64_t)v;
    return true;
}

bool json_read_bool(json_reader *r, const char *field, bool *out)
{
    if (!expect(r, JSON_BOOL, field)) return false;
    *out = literal(r, "true");
    return *out || literal(r, "false");
}

bool json_read_null(json_reader *r)
{
    return json_peek(r) == JSON_NULL && literal(r, "null");
}

bool json_skip(json_reader *r)
{
    bool integer;
    char key[JSON_KEY_MAX];
    switch (json_peek(r)) {
    case JSON_NULL:
        return json_read_null(r);
    case JSON_BOOL: {
        bool b;
        return json_read_bool(r, NULL, &b);
    }
    case JSON_NUMBER:
        return number(r, NULL, &integer);
    case JSON_STRING:
        return json_read_string(r, NULL, NULL, NULL);
    case JSON_ARRAY:
        if (!json_array_begin(r, NULL)) return false;
        while (json_array_next(r))
            if (!json_skip(r)) return false;
        return !json_failed(r);
    case JSON_OBJECT:
        if (!json_object_begin(r, NULL)) return false;
        while (json_object_next(r, key))
            if (!json_skip(r)) return false;
        return !json_failed(r);
    case JSON_INVALID:
        break;
    }
    return false;
}

bool json_end(json_reader *r)
{
    if (json_failed(r)) return false;
    skip_space(r);
    return r->at == r->end || syntax(r, NULL, "the end of the text");
}
