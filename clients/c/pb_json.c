/*
 * pb_json.c — protobuf-c messages to JSON through their descriptors, and a
 * flat "key: value" rendering of such JSON.
 */
#include "pb_json.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

json_object *pb_json_float(double value)
{
    if (!isfinite(value)) return NULL; /* json-c writes a NULL member as null */
    char text[32];
    snprintf(text, sizeof text, "%.9g", value);
    return json_object_new_double_s(value, text);
}

static json_object *base64_json(const ProtobufCBinaryData *bytes)
{
    static const char ALPHABET[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t out_len = (bytes->len + 2) / 3 * 4;
    char *text = malloc(out_len + 1);
    if (!text) return NULL;
    size_t o = 0;
    for (size_t i = 0; i < bytes->len; i += 3) {
        uint32_t v = (uint32_t)bytes->data[i] << 16;
        if (i + 1 < bytes->len) v |= (uint32_t)bytes->data[i + 1] << 8;
        if (i + 2 < bytes->len) v |= bytes->data[i + 2];
        text[o++] = ALPHABET[(v >> 18) & 63];
        text[o++] = ALPHABET[(v >> 12) & 63];
        text[o++] = i + 1 < bytes->len ? ALPHABET[(v >> 6) & 63] : '=';
        text[o++] = i + 2 < bytes->len ? ALPHABET[v & 63] : '=';
    }
    text[o] = '\0';
    json_object *s = json_object_new_string(text);
    free(text);
    return s;
}

/* google.protobuf.Duration as proto3's JSON mapping writes it: "1.500s". */
static json_object *duration_json(const ProtobufCMessage *msg)
{
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    const ProtobufCFieldDescriptor *sf =
        protobuf_c_message_descriptor_get_field_by_name(d, "seconds");
    const ProtobufCFieldDescriptor *nf =
        protobuf_c_message_descriptor_get_field_by_name(d, "nanos");
    int64_t secs = *(const int64_t *)((const char *)msg + sf->offset);
    int32_t nanos = *(const int32_t *)((const char *)msg + nf->offset);
    bool negative = secs < 0 || nanos < 0;
    char text[48];
    snprintf(text, sizeof text, "%s%lld.%09lds", negative ? "-" : "", llabs((long long)secs),
             labs((long)nanos));
    return json_object_new_string(text);
}

static json_object *message_json(const ProtobufCMessage *msg)
{
    if (!msg) return NULL;
    if (strcmp(msg->descriptor->name, "google.protobuf.Duration") == 0) return duration_json(msg);
    return pb_to_json(msg);
}

/* One value of the field's type stored at p. */
static json_object *value_json(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32:
    case PROTOBUF_C_TYPE_SINT32:
    case PROTOBUF_C_TYPE_SFIXED32:
        return json_object_new_int(*(const int32_t *)p);
    case PROTOBUF_C_TYPE_UINT32:
    case PROTOBUF_C_TYPE_FIXED32:
        return json_object_new_int64(*(const uint32_t *)p);
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
        return json_object_new_int64(*(const int64_t *)p);
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
        return json_object_new_uint64(*(const uint64_t *)p);
    case PROTOBUF_C_TYPE_FLOAT:
        return pb_json_float(*(const float *)p);
    case PROTOBUF_C_TYPE_DOUBLE:
        return pb_json_float(*(const double *)p);
    case PROTOBUF_C_TYPE_BOOL:
        return json_object_new_boolean(*(const protobuf_c_boolean *)p);
    case PROTOBUF_C_TYPE_ENUM: {
        int v = *(const int *)p;
        const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(f->descriptor, v);
        return ev ? json_object_new_string(ev->name) : json_object_new_int(v);
    }
    case PROTOBUF_C_TYPE_STRING:
        return json_object_new_string(*(char *const *)p ? *(char *const *)p : "");
    case PROTOBUF_C_TYPE_BYTES:
        return base64_json(p);
    case PROTOBUF_C_TYPE_MESSAGE:
        return message_json(*(ProtobufCMessage *const *)p);
    }
    return NULL;
}

static size_t value_size(ProtobufCType type)
{
    switch (type) {
    case PROTOBUF_C_TYPE_INT64:
    case PROTOBUF_C_TYPE_SINT64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64:
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    default:
        return 4;
    }
}

/* protobuf-c has no map type: a map is a repeated *Entry message of key/value. */
static bool is_map_entry(const ProtobufCFieldDescriptor *f)
{
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) return false;
    const ProtobufCMessageDescriptor *d = f->descriptor;
    size_t len = strlen(d->name);
    return d->n_fields == 2 && len > 5 && strcmp(d->name + len - 5, "Entry") == 0 &&
           strcmp(d->fields[0].name, "key") == 0 && strcmp(d->fields[1].name, "value") == 0;
}

static json_object *repeated_json(const ProtobufCFieldDescriptor *f, const char *base)
{
    size_t n = *(const size_t *)(base + f->quantifier_offset);
    const char *items = *(char *const *)(base + f->offset);
    if (is_map_entry(f)) {
        json_object *obj = json_object_new_object();
        for (size_t i = 0; i < n; i++) {
            const ProtobufCMessage *entry = ((ProtobufCMessage *const *)items)[i];
            const ProtobufCMessageDescriptor *d = entry->descriptor;
            json_object *key = value_json(&d->fields[0], (const char *)entry + d->fields[0].offset);
            json_object_object_add(
                obj, json_object_get_string(key),
                value_json(&d->fields[1], (const char *)entry + d->fields[1].offset));
            json_object_put(key);
        }
        return obj;
    }
    json_object *arr = json_object_new_array_ext((int)n);
    size_t size = value_size(f->type);
    for (size_t i = 0; i < n; i++)
        json_object_array_add(arr, value_json(f, items + i * size));
    return arr;
}

json_object *pb_to_json(const ProtobufCMessage *msg)
{
    const ProtobufCMessageDescriptor *d = msg->descriptor;
    const char *base = (const char *)msg;
    json_object *obj = json_object_new_object();
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            if (*(const uint32_t *)(base + f->quantifier_offset) != f->id) continue;
        } else if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->label != PROTOBUF_C_LABEL_REPEATED &&
                   !*(ProtobufCMessage *const *)(base + f->offset)) {
            continue;
        }
        json_object *value = f->label == PROTOBUF_C_LABEL_REPEATED
                                 ? repeated_json(f, base)
                                 : value_json(f, base + f->offset);
        json_object_object_add(obj, f->name, value);
    }
    return obj;
}

void pb_json_print_flat(FILE *out, json_object *obj, const char *prefix)
{
    json_object_object_foreach(obj, key, value)
    {
        char path[256];
        snprintf(path, sizeof path, "%s%s%s", prefix, *prefix ? "." : "", key);
        if (json_object_is_type(value, json_type_object)) {
            pb_json_print_flat(out, value, path);
        } else {
            const char *text = json_object_is_type(value, json_type_string)
                                   ? json_object_get_string(value)
                                   : json_object_to_json_string_ext(value, JSON_C_TO_STRING_PLAIN);
            fprintf(out, "%s: %s\n", path, text);
        }
    }
}
