/*
 * proto_wire.h — what a request message must pass before protobuf-c
 * decodes it, read from the protobuf wire format against the message's
 * descriptor:
 *
 * - every string field (at any depth) is valid UTF-8 without a NUL byte:
 *   proto3 requires UTF-8 and other runtimes refuse anything else, and the
 *   decoded C string would silently end at a NUL;
 * - fields that protobuf-c refuses but protobuf says to skip as unknown
 *   fields are removed: a known field sent with another wire type, and
 *   groups. Unknown fields are removed too: the daemon has no use for them,
 *   and protobuf-c would allocate a copy of each.
 */
#ifndef LMSCORED_PROTO_WIRE_H
#define LMSCORED_PROTO_WIRE_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

/* Checks msg (len bytes) as a desc. On success *cleaned is NULL when msg
 * can be decoded as it is, or a copy without the skipped fields
 * (*cleaned_len bytes, the caller frees it). Fails with
 * LMS_ERR_INVALID_ARGUMENT: reason malformed_request when msg is not
 * protobuf wire format, invalid_utf8 or nul_in_text with field naming the
 * string (e.g. "items[2].text", "label_texts[0]"). */
lms_status proto_wire_check(const ProtobufCMessageDescriptor *desc, const uint8_t *msg, size_t len,
                            uint8_t **cleaned, size_t *cleaned_len, lms_error *err);

#endif
