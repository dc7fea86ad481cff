/*
 * corpus_io.c — see corpus_io.h.
 */
#include "corpus_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "gguf.h"
#include "tokenizer.h"

static int push(corpus *c, size_t *cap, const char *text, size_t len)
{
    if (c->n == *cap) {
        *cap = *cap ? *cap * 2 : 256;
        corpus_line *grown = realloc(c->lines, *cap * sizeof *grown);
        if (!grown) return -1;
        c->lines = grown;
    }
    char *copy = malloc(len + 1);
    if (!copy) return -1;
    memcpy(copy, text, len);
    copy[len] = '\0';
    c->lines[c->n++] = (corpus_line){copy, len};
    return 0;
}

static int hex_value(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static int parse_line(corpus *c, size_t *cap, const char *line, size_t len, int hex)
{
    if (hex) {
        if (len % 2) return -1;
        char *bytes = malloc(len / 2 + 1);
        if (!bytes) return -1;
        for (size_t i = 0; i < len; i += 2) {
            int hi = hex_value(line[i]), lo = hex_value(line[i + 1]);
            if (hi < 0 || lo < 0) {
                free(bytes);
                return -1;
            }
            bytes[i / 2] = (char)(hi * 16 + lo);
        }
        int rc = push(c, cap, bytes, len / 2);
        free(bytes);
        return rc;
    }
    json_object *s = json_tokener_parse(line);
    if (!s || !json_object_is_type(s, json_type_string)) {
        json_object_put(s);
        return -1;
    }
    int rc = push(c, cap, json_object_get_string(s), (size_t)json_object_get_string_len(s));
    json_object_put(s);
    return rc;
}

int corpus_read(const char *path, int hex, corpus *out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        return -1;
    }
    *out = (corpus){0};
    size_t cap = 0, line_cap = 0, line_no = 0;
    char *line = NULL;
    ssize_t n;
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &line_cap, f)) >= 0) {
        line_no++;
        while (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        if (n == 0) continue;
        rc = parse_line(out, &cap, line, (size_t)n, hex);
        if (rc)
            fprintf(stderr, "%s:%zu: not a %s line\n", path, line_no, hex ? "hex" : "JSON string");
    }
    free(line);
    fclose(f);
    if (rc) corpus_free(out);
    return rc;
}

void corpus_free(corpus *c)
{
    for (size_t i = 0; i < c->n; i++)
        free(c->lines[i].text);
    free(c->lines);
    *c = (corpus){0};
}

struct lms_tokenizer *corpus_open_tokenizer(const char *path)
{
    lms_error err = {0};
    lms_tokenizer *tok = NULL;
    size_t len = strlen(path);
    if (len > 5 && !strcmp(path + len - 5, ".gguf")) {
        gguf_file *f;
        if (gguf_open(path, &f, &err) == LMS_OK) {
            lms_tokenizer_load_gguf(f, &tok, &err);
            gguf_close(f);
        }
    } else {
        lms_tokenizer_load_hf(path, &tok, &err);
    }
    if (!tok) fprintf(stderr, "%s: %s (%s)\n", path, err.msg, lms_status_name(err.status));
    return tok;
}
