/*
 * proto_wire.c — request messages checked on the protobuf wire format
 * before protobuf-c decodes them (see proto_wire.h).
 *
 * One walk over a message validates it and measures what it keeps; only
 * when something is skipped does a second walk write the kept fields into
 * a copy (a nested message whose fields were skipped gets its new length).
 */
#include "proto_wire.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

enum {
    WIRE_VARINT = 0,
    WIRE_64BIT = 1,
    WIRE_LEN = 2,
    WIRE_GROUP_START = 3,
    WIRE_GROUP_END = 4,
    WIRE_32BIT = 5
};

/* Deeper group nesting is refused rather than followed. */
#define MAX_GROUP_DEPTH 64
/* The largest field number protobuf allows. */
#define MAX_FIELD_NUMBER ((1u << 29) - 1)
/* Repeated fields are indexed in paths for this many fields of a message. */
#define MAX_INDEXED_FIELDS 32

typedef struct {
    const uint8_t *p, *end;
} reader;

typedef struct {
    const ProtobufCMessageDescriptor *top; /* the request's type, for messages */
    lms_error *err;
    char path[sizeof((lms_error *)0)->field]; /* the field being read */
    bool skipped;                             /* a field was left out */
} walk;

static bool read_varint(reader *r, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64 && r->p < r->end; shift += 7) {
        uint8_t b = *r->p++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static size_t varint_size(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80)
        v >>= 7, n++;
    return n;
}

static uint8_t *write_varint(uint8_t *out, uint64_t v)
{
    while (v >= 0x80) {
        *out++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *out++ = (uint8_t)v;
    return out;
}

static lms_status malformed(walk *w, const char *what)
{
    return lms_fail(w->err, LMS_ERR_INVALID_ARGUMENT, "malformed_request", NULL,
                    "the message is not a valid %s: %s%s%s", w->top->name, what,
                    w->path[0] ? " in " : "", w->path);
}

/* Moves past one value of wire type wt (a group: up to its end). */
static bool skip_value(reader *r, unsigned wt, uint64_t number, int depth)
{
    uint64_t v;
    switch (wt) {
    case WIRE_VARINT:
        return read_varint(r, &v);
    case WIRE_64BIT:
    case WIRE_32BIT: {
        size_t n = wt == WIRE_64BIT ? 8 : 4;
        if ((size_t)(r->end - r->p) < n) return false;
        r->p += n;
        return true;
    }
    case WIRE_LEN:
        if (!read_varint(r, &v) || v > (uint64_t)(r->end - r->p)) return false;
        r->p += v;
        return true;
    case WIRE_GROUP_START:
        if (depth >= MAX_GROUP_DEPTH) return false;
        for (;;) {
            uint64_t tag;
            if (!read_varint(r, &tag)) return false;
            if ((tag & 7) == WIRE_GROUP_END) return tag >> 3 == number;
            if (!skip_value(r, (unsigned)(tag & 7), tag >> 3, depth + 1)) return false;
        }
    default:
        return false;
    }
}

static bool packable(ProtobufCType t)
{
    return t != PROTOBUF_C_TYPE_STRING && t != PROTOBUF_C_TYPE_BYTES &&
           t != PROTOBUF_C_TYPE_MESSAGE;
}

/* The wire types protobuf-c accepts for f (repeated scalars also packed). */
static bool wire_type_fits(const ProtobufCFieldDescriptor *f, unsigned wt)
{
    if (wt == WIRE_LEN && f->label == PROTOBUF_C_LABEL_REPEATED && packable(f->type)) return true;
    switch (f->type) {
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return wt == WIRE_32BIT;
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return wt == WIRE_64BIT;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return wt == WIRE_LEN;
    default: /* the varint types: integers, bool, enum */
        return wt == WIRE_VARINT;
    }
}

static lms_status check_text(walk *w, const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        if (s[i] == 0)
            return lms_fail(w->err, LMS_ERR_INVALID_ARGUMENT, "nul_in_text", w->path,
                            "%s: a NUL byte at byte %zu; texts cannot contain U+0000", w->path, i);
        size_t len = utf8_sequence_len(s + i, n - i);
        if (len == 0)
            return lms_fail(w->err, LMS_ERR_INVALID_ARGUMENT, "invalid_utf8", w->path,
                            "%s: not valid UTF-8 at byte %zu", w->path, i);
        i += len;
    }
    return LMS_OK;
}

/* Appends f (with its index when repeated) to the path; returns the old
 * length, for path_pop. */
static size_t path_push(walk *w, const ProtobufCFieldDescriptor *f, unsigned index)
{
    size_t mark = strlen(w->path);
    const char *dot = mark ? "." : "";
    if (f->label == PROTOBUF_C_LABEL_REPEATED)
        snprintf(w->path + mark, sizeof w->path - mark, "%s%s[%u]", dot, f->name, index);
    else
        snprintf(w->path + mark, sizeof w->path - mark, "%s%s", dot, f->name);
    return mark;
}

static void path_pop(walk *w, size_t mark)
{
    w->path[mark] = '\0';
}

static lms_status walk_message(walk *w, const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                               size_t len, uint8_t *out, size_t *kept);

/* A kept string, bytes or message field f whose payload is [payload,
 * payload + n), its tag at [tag, tag + tag_len): checked, measured into
 * *kept and, when out is non-NULL, written at out + *kept. */
static lms_status walk_len_field(walk *w, const ProtobufCFieldDescriptor *f, unsigned index,
                                 const uint8_t *tag, size_t tag_len, const uint8_t *payload,
                                 size_t n, uint8_t *out, size_t *kept)
{
    size_t mark = path_push(w, f, index);
    size_t inner = n;
    lms_status st = LMS_OK;
    if (f->type == PROTOBUF_C_TYPE_STRING)
        st = check_text(w, payload, n);
    else if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        st = walk_message(w, f->descriptor, payload, n, NULL, &inner);
    if (st == LMS_OK && out) {
        uint8_t *o = out + *kept;
        memcpy(o, tag, tag_len);
        o = write_varint(o + tag_len, inner);
        if (f->type == PROTOBUF_C_TYPE_MESSAGE)
            st = walk_message(w, f->descriptor, payload, n, o, &inner);
        else
            memcpy(o, payload, n);
    }
    path_pop(w, mark);
    *kept += tag_len + varint_size(inner) + inner;
    return st;
}

/* Walks the message [msg, msg + len) of type desc: checks it, sets *kept
 * to the size of the fields it keeps and, when out is non-NULL, writes
 * them there. */
static lms_status walk_message(walk *w, const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                               size_t len, uint8_t *out, size_t *kept)
{
    reader r = {msg, msg + len};
    unsigned counts[MAX_INDEXED_FIELDS] = {0};
    *kept = 0;
    while (r.p < r.end) {
        const uint8_t *field = r.p;
        uint64_t tag;
        if (!read_varint(&r, &tag) || tag >> 3 == 0 || tag >> 3 > MAX_FIELD_NUMBER)
            return malformed(w, "a bad field tag");
        unsigned wt = (unsigned)(tag & 7);
        const ProtobufCFieldDescriptor *f =
            protobuf_c_message_descriptor_get_field(desc, (unsigned)(tag >> 3));
        size_t tag_len = (size_t)(r.p - field);
        if (!f || !wire_type_fits(f, wt)) { /* unknown: skipped */
            if (!skip_value(&r, wt, tag >> 3, 0)) return malformed(w, "a truncated field");
            w->skipped = true;
            continue;
        }
        size_t i = (size_t)(f - desc->fields);
        unsigned index = i < MAX_INDEXED_FIELDS ? counts[i]++ : 0;
        uint64_t n;
        if (wt != WIRE_LEN || packable(f->type)) { /* a scalar, or packed scalars: as is */
            if (!skip_value(&r, wt, tag >> 3, 0)) return malformed(w, "a truncated field");
            if (out) memcpy(out + *kept, field, (size_t)(r.p - field));
            *kept += (size_t)(r.p - field);
        } else if (!read_varint(&r, &n) || n > (uint64_t)(r.end - r.p)) {
            return malformed(w, "a truncated field");
        } else {
            const uint8_t *payload = r.p;
            r.p += n;
            lms_status st =
                walk_len_field(w, f, index, field, tag_len, payload, (size_t)n, out, kept);
            if (st != LMS_OK) return st;
        }
    }
    return LMS_OK;
}

lms_status proto_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len,
                            uint8_t **cleaned, size_t *cleaned_len, lms_error *err)
{
    walk w = {.top = desc, .err = err};
    size_t kept;
    *cleaned = NULL;
    *cleaned_len = 0;
    lms_status st = walk_message(&w, desc, msg, len, NULL, &kept);
    if (st != LMS_OK || !w.skipped) return st;
    uint8_t *copy = malloc(kept ? kept : 1);
    if (!copy) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    walk_message(&w, desc, msg, len, copy, &kept);
    *cleaned = copy;
    *cleaned_len = kept;
    return LMS_OK;
}
