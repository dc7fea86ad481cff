/*
 * json_writer.c — the JSON text builder (see json_writer.h).
 */
#include "json_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_writer_init(json_writer *w)
{
    memset(w, 0, sizeof *w);
}

void json_writer_free(json_writer *w)
{
    free(w->data);
    w->data = NULL;
    w->len = w->cap = 0;
}

bool json_writer_done(json_writer *w, char **text, size_t *len)
{
    if (w->failed || !w->data) {
        json_writer_free(w);
        return false;
    }
    *text = w->data;
    *len = w->len;
    w->data = NULL;
    return true;
}

/* Room for n more bytes and the NUL. */
static bool reserve(json_writer *w, size_t n)
{
    if (w->failed) return false;
    if (w->len + n + 1 <= w->cap) return true;
    size_t cap = w->cap ? w->cap : 256;
    while (cap < w->len + n + 1)
        cap *= 2;
    char *grown = realloc(w->data, cap);
    if (!grown) {
        w->failed = true;
        return false;
    }
    w->data = grown;
    w->cap = cap;
    return true;
}

static void raw(json_writer *w, const char *s, size_t n)
{
    if (!reserve(w, n)) return;
    memcpy(w->data + w->len, s, n);
    w->len += n;
    w->data[w->len] = '\0';
}

/* Before a value or a key: the comma after the container's previous
 * member. A value that follows its key takes none. */
static void separate(json_writer *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth == 0) return;
    if (w->has_member[w->depth - 1]) raw(w, ",", 1);
    w->has_member[w->depth - 1] = true;
}

static void open(json_writer *w, char bracket)
{
    separate(w);
    raw(w, &bracket, 1);
    if (w->depth == JSON_WRITER_MAX_DEPTH) {
        w->failed = true; /* a programming error: no response nests this deep */
        return;
    }
    w->has_member[w->depth++] = false;
}

static void close_(json_writer *w, char bracket)
{
    raw(w, &bracket, 1);
    if (w->depth > 0) w->depth--;
}

void json_object_open(json_writer *w)
{
    open(w, '{');
}

void json_object_close(json_writer *w)
{
    close_(w, '}');
}

void json_array_open(json_writer *w)
{
    open(w, '[');
}

void json_array_close(json_writer *w)
{
    close_(w, ']');
}

static void escaped(json_writer *w, const char *s, size_t len)
{
    raw(w, "\"", 1);
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        raw(w, s + start, i - start);
        char esc[8];
        const char *named = c == '"'    ? "\\\""
                            : c == '\\' ? "\\\\"
                            : c == '\n' ? "\\n"
                            : c == '\r' ? "\\r"
                            : c == '\t' ? "\\t"
                                        : NULL;
        if (named)
            raw(w, named, 2);
        else
            raw(w, esc, (size_t)snprintf(esc, sizeof esc, "\\u%04x", c));
        start = i + 1;
    }
    raw(w, s + start, len - start);
    raw(w, "\"", 1);
}

void json_key(json_writer *w, const char *name)
{
    separate(w);
    escaped(w, name, strlen(name));
    raw(w, ":", 1);
    w->after_key = true;
}

void json_string_n(json_writer *w, const char *s, size_t len)
{
    separate(w);
    escaped(w, s, len);
}

void json_string(json_writer *w, const char *s)
{
    json_string_n(w, s, strlen(s));
}

void json_int(json_writer *w, int64_t v)
{
    char buf[24];
    separate(w);
    raw(w, buf, (size_t)snprintf(buf, sizeof buf, "%lld", (long long)v));
}

void json_null(json_writer *w)
{
    separate(w);
    raw(w, "null", 4);
}

void json_raw(json_writer *w, const char *json, size_t len)
{
    separate(w);
    raw(w, json, len);
}

void json_boolean(json_writer *w, bool v)
{
    separate(w);
    raw(w, v ? "true" : "false", v ? 4 : 5);
}

void json_float(json_writer *w, float v)
{
    separate(w);
    if (!isfinite(v)) {
        raw(w, "null", 4);
        return;
    }
    /* %g drops trailing zeros, so 6 digits already give the shortest form
     * of any float that needs no more; 9 always read back exactly. */
    char buf[32];
    int n = 0;
    for (int digits = 6; digits <= 9; digits++) {
        n = snprintf(buf, sizeof buf, "%.*g", digits, (double)v);
        if (strtof(buf, NULL) == v) break;
    }
    raw(w, buf, (size_t)n);
}
