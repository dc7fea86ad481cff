/*
 * status_details.c — rpc_status construction and the google.rpc.Status /
 * ErrorInfo encoding for grpc-status-details-bin.
 */
#include "status_details.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "google/rpc/error_details.pb-c.h"
#include "google/rpc/status.pb-c.h"

void rpc_status_ok(rpc_status *st)
{
    memset(st, 0, sizeof *st);
    st->code = GRPC_STATUS_OK;
}

void rpc_status_set(rpc_status *st, grpc_status_code code, const char *reason, const char *field,
                    const char *fmt, ...)
{
    va_list ap;
    rpc_status_ok(st);
    st->code = code;
    snprintf(st->reason, sizeof st->reason, "%s", reason ? reason : "");
    snprintf(st->field, sizeof st->field, "%s", field ? field : "");
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
}

void rpc_status_from_error(rpc_status *st, const lms_error *err)
{
    grpc_status_code code;
    const char *fallback_reason;
    switch (err->status) {
    case LMS_ERR_INVALID_ARGUMENT:
    case LMS_ERR_UNSUPPORTED:
        code = GRPC_STATUS_INVALID_ARGUMENT;
        fallback_reason = "invalid_argument";
        break;
    case LMS_ERR_RESOURCE_EXHAUSTED:
    case LMS_ERR_NOMEM:
        code = GRPC_STATUS_RESOURCE_EXHAUSTED;
        fallback_reason = "resource_exhausted";
        break;
    case LMS_ERR_CANCELLED:
        code = GRPC_STATUS_CANCELLED;
        fallback_reason = "cancelled";
        break;
    default:
        code = GRPC_STATUS_INTERNAL;
        fallback_reason = "internal";
        break;
    }
    const char *reason = err->reason[0] ? err->reason : fallback_reason;
    /* The message must name the field even when the engine's text does not. */
    if (err->field[0] && !strstr(err->msg, err->field))
        rpc_status_set(st, code, reason, err->field, "%s: %s", err->field, err->msg);
    else
        rpc_status_set(st, code, reason, err->field, "%s", err->msg);
}

grpc_slice status_details_encode(const rpc_status *st)
{
    Google__Rpc__ErrorInfo__MetadataEntry field_entry =
        GOOGLE__RPC__ERROR_INFO__METADATA_ENTRY__INIT;
    Google__Rpc__ErrorInfo__MetadataEntry *entries[1] = {&field_entry};
    Google__Rpc__ErrorInfo info = GOOGLE__RPC__ERROR_INFO__INIT;
    info.reason = (char *)st->reason;
    info.domain = STATUS_DETAILS_DOMAIN;
    if (st->field[0]) {
        field_entry.key = "field";
        field_entry.value = (char *)st->field;
        info.n_metadata = 1;
        info.metadata = entries;
    }

    size_t info_len = google__rpc__error_info__get_packed_size(&info);
    uint8_t info_bytes[sizeof st->reason + sizeof st->field + 64];
    google__rpc__error_info__pack(&info, info_bytes);

    Google__Protobuf__Any any = GOOGLE__PROTOBUF__ANY__INIT;
    any.type_url = "type.googleapis.com/google.rpc.ErrorInfo";
    any.value.data = info_bytes;
    any.value.len = info_len;
    Google__Protobuf__Any *details[1] = {&any};

    Google__Rpc__Status status = GOOGLE__RPC__STATUS__INIT;
    status.code = (int32_t)st->code;
    status.message = (char *)st->message;
    status.n_details = 1;
    status.details = details;

    grpc_slice out = grpc_slice_malloc(google__rpc__status__get_packed_size(&status));
    google__rpc__status__pack(&status, GRPC_SLICE_START_PTR(out));
    return out;
}
