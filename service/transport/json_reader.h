/*
 * json_reader.h — a strict JSON reader (RFC 8259) that the caller walks
 * value by value over a text held whole, so that a request is converted as
 * it is read: no tree is built (json-c's would take some 30 times the
 * text's size for an array of small numbers). What a value becomes is the
 * caller's to allocate, within its budget.
 *
 *     json_reader r;
 *     json_reader_init(&r, text, len);
 *     if (json_object_begin(&r, "")) {
 *         char key[JSON_KEY_MAX];
 *         while (json_object_next(&r, key)) {
 *             if (strcmp(key, "n") == 0) json_read_int(&r, "n", INT32_MIN, INT32_MAX, &n);
 *             else json_skip(&r);
 *         }
 *     }
 *     json_end(&r);
 *     if (json_failed(&r)) ... r.err says why ...
 *
 * The first error stops the walk: every later call returns false (or
 * JSON_INVALID) and leaves it as it is. Errors are LMS_ERR_INVALID_ARGUMENT
 * with reason malformed_request (not JSON, or a value of another type than
 * the caller asked for), invalid_utf8 (a string that is not UTF-8, raw or
 * through \u escapes: a lone surrogate) or nul_in_text (a string holding
 * U+0000), and the field the caller named (e.g. "items[2]").
 */
#ifndef LMSCORED_JSON_READER_H
#define LMSCORED_JSON_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

/* Deeper nesting is refused (malformed_request): no request needs more. */
#define JSON_MAX_DEPTH 32
/* Room for an object key; longer keys are read as "" (no known field has
 * one that long). */
#define JSON_KEY_MAX 64

typedef enum {
    JSON_INVALID,
    JSON_NULL,
    JSON_BOOL,
    JSON_NUMBER,
    JSON_STRING,
    JSON_ARRAY,
    JSON_OBJECT,
} json_kind;

typedef struct {
    const char *text, *at, *end;
    int depth;
    bool first; /* the container just opened has had no member yet */
    lms_error err;
} json_reader;

void json_reader_init(json_reader *r, const char *text, size_t len);
bool json_failed(const json_reader *r);

/* The type of the next value, from its first character (JSON_INVALID when
 * none can start there, which fails the reader). */
json_kind json_peek(json_reader *r);

/* Containers: begin consumes the opening bracket (failing when the next
 * value is of another type: field names it); next is true while there is
 * another member or element, and consumes the separators and the closing
 * bracket. json_object_next stores the member's key (decoded, cut to "" when
 * it does not fit) and consumes the colon. */
bool json_object_begin(json_reader *r, const char *field);
bool json_object_next(json_reader *r, char key[JSON_KEY_MAX]);
bool json_array_begin(json_reader *r, const char *field);
bool json_array_next(json_reader *r);

/* Scalars. A string is decoded into out, which the caller allocates with
 * the json_string_bound bytes that the decoded string and its NUL never
 * exceed, and gets back NUL-terminated, *len bytes long (len may be NULL;
 * out too, to check the string without keeping it); a string holding
 * U+0000 or that is not UTF-8 fails. An integer is a number whose value is
 * integral, as JSON Schema's integer and proto3's JSON parsers take it (2,
 * 2.0, 2e0, 20e-1; not 2.5), in [min, max]. json_read_null consumes a null and
 * is true when there was one. */
bool json_string_bound(json_reader *r, const char *field, size_t *bound);
bool json_read_string(json_reader *r, const char *field, char *out, size_t *len);
bool json_read_int(json_reader *r, const char *field, int64_t min, int64_t max, int64_t *out);
bool json_read_bool(json_reader *r, const char *field, bool *out);
bool json_read_null(json_reader *r);

/* Skips the next value, whatever it is (checking it all the same). */
bool json_skip(json_reader *r);
/* Only whitespace may follow the document's value. */
bool json_end(json_reader *r);

/* Names the field of the reader's error when it has none yet: a caller
 * reading many elements passes no field and names it only on failure. */
void json_name_field(json_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Fails the reader with reason and field (unless it failed already), for
 * the caller's own checks on what it read. */
bool json_fail(json_reader *r, const char *reason, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
