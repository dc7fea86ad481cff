/*
 * json_writer.h — JSON text into a growing buffer: objects and arrays whose
 * commas are placed for the caller, strings escaped (control characters,
 * quotes and backslashes; UTF-8 passes through), and float32 scores in the
 * shortest decimal that reads back as the same float, so a client parsing
 * the text gets the bits the engine computed. Out of memory is sticky:
 * every later write is a no-op and json_writer_done says so.
 */
#ifndef LMSCORED_JSON_WRITER_H
#define LMSCORED_JSON_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_WRITER_MAX_DEPTH 16

typedef struct {
    char *data;
    size_t len, cap;
    bool failed;
    int depth;
    bool after_key;                         /* the next value is a member's, its comma placed */
    bool has_member[JSON_WRITER_MAX_DEPTH]; /* per open container: a comma goes before the next */
} json_writer;

void json_writer_init(json_writer *w);
/* The text (NUL-terminated, len bytes; the caller frees it) and true; or
 * false, the buffer freed, when memory ran out. */
bool json_writer_done(json_writer *w, char **text, size_t *len);
void json_writer_free(json_writer *w);

void json_object_open(json_writer *w);
void json_object_close(json_writer *w);
void json_array_open(json_writer *w);
void json_array_close(json_writer *w);
/* The next member's name, in an object. */
void json_key(json_writer *w, const char *name);

void json_string(json_writer *w, const char *s);
void json_string_n(json_writer *w, const char *s, size_t len);
void json_int(json_writer *w, int64_t v);
void json_boolean(json_writer *w, bool v);
void json_null(json_writer *w);
/* A value that is JSON text already (len bytes, written as they are: the
 * caller vouches for them). */
void json_raw(json_writer *w, const char *json, size_t len);
/* The shortest decimal that strtof reads back as v; null for NaN and the
 * infinities, which JSON cannot write. */
void json_float(json_writer *w, float v);

#endif
