/*
 * fuzz_proto_wire.c — libFuzzer target for the daemon's wire-format check
 * (service/transport/proto_wire.c) on every request message the daemon decodes. The
 * first input byte picks the message, the rest is the message. When the
 * check accepts the bytes:
 *
 * - where protobuf-c decodes what the daemon would hand it (the bytes, or
 *   the copy without the skipped fields), every decoded string, at any
 *   depth, is valid UTF-8 (the check does not look inside packed scalars,
 *   so a message it accepts may still fail to decode: malformed_request);
 * - the check accepts its own copy as it is (nothing left to skip).
 *
 * A violation aborts, which libFuzzer reports as a crash.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "lmscore/v1/score.pb-c.h"
#include "proto_wire.h"
#include "utf8_oracle.h"

static const ProtobufCMessageDescriptor *const MESSAGES[] = {
    &lmscore__v1__score_request__descriptor,
    &lmscore__v1__score_items_request__descriptor,
    &lmscore__v1__tokenize_request__descriptor,
    &lmscore__v1__get_model_info_request__descriptor,
};
#define N_MESSAGES (sizeof MESSAGES / sizeof *MESSAGES)

static void check_strings(const ProtobufCMessage *m);

static void check_value(const ProtobufCFieldDescriptor *f, const void *value)
{
    if (f->type == PROTOBUF_C_TYPE_STRING) {
        const char *s = *(const char *const *)value;
        if (s && !utf8_valid((const unsigned char *)s)) abort();
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        const ProtobufCMessage *sub = *(const ProtobufCMessage *const *)value;
        if (sub) check_strings(sub);
    }
}

static void check_strings(const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    const char *base = (const char *)m;
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            const size_t n = *(const size_t *)(base + f->quantifier_offset);
            const char *array = *(const char *const *)(base + f->offset);
            for (size_t j = 0; j < n; j++)
                check_value(f, array + j * sizeof(void *));
            continue;
        }
        if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
            *(const uint32_t *)(base + f->quantifier_offset) != f->id)
            continue;
        check_value(f, base + f->offset);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const ProtobufCMessageDescriptor *desc = MESSAGES[data[0] % N_MESSAGES];
    const uint8_t *msg = data + 1;
    const size_t len = size - 1;
    uint8_t *cleaned;
    size_t cleaned_len;
    lms_error err;
    if (proto_wire_check(desc, msg, len, &cleaned, &cleaned_len, &err) != LMS_OK) return 0;
    const uint8_t *decode = cleaned ? cleaned : msg;
    const size_t decode_len = cleaned ? cleaned_len : len;
    ProtobufCMessage *m = protobuf_c_message_unpack(desc, NULL, decode_len, decode);
    if (m) {
        check_strings(m);
        protobuf_c_message_free_unpacked(m, NULL);
    }
    if (cleaned) {
        uint8_t *again;
        size_t again_len;
        if (proto_wire_check(desc, cleaned, cleaned_len, &again, &again_len, &err) != LMS_OK ||
            again)
            abort();
        free(cleaned);
    }
    return 0;
}
