/*
 * http_status.c — gRPC status → HTTP status and JSON error body (see
 * http_status.h).
 */
#include "http_status.h"

#include <string.h>

#include "metrics.h"

unsigned http_status_of(const rpc_status *st)
{
    switch (st->code) {
    case GRPC_STATUS_OK:
        return 200;
    case GRPC_STATUS_INVALID_ARGUMENT:
        if (strcmp(st->reason, "unsupported_media_type") == 0) return 415;
        /* TEI answers a truncation_direction it cannot deserialize so */
        if (strcmp(st->reason, "invalid_truncation_direction") == 0) return 422;
        return 400;
    case GRPC_STATUS_FAILED_PRECONDITION:
    case GRPC_STATUS_OUT_OF_RANGE:
        return 400;
    case GRPC_STATUS_UNAUTHENTICATED:
        return 401;
    case GRPC_STATUS_PERMISSION_DENIED:
        return 403;
    case GRPC_STATUS_NOT_FOUND:
        return 404;
    case GRPC_STATUS_UNIMPLEMENTED:
        if (strcmp(st->reason, "not_found") == 0) return 404;
        if (strcmp(st->reason, "method_not_allowed") == 0) return 405;
        if (strcmp(st->reason, "http_version_not_supported") == 0) return 505;
        return 501;
    case GRPC_STATUS_RESOURCE_EXHAUSTED:
        if (strcmp(st->reason, "queue_full") == 0) return 429;
        if (strcmp(st->reason, "uri_too_long") == 0) return 414;
        if (strcmp(st->reason, "headers_too_large") == 0) return 431;
        /* out of memory, or the receive buffer full: the server's state */
        if (!st->reason[0] || strcmp(st->reason, "resource_exhausted") == 0 ||
            strcmp(st->reason, "receive_buffer_full") == 0)
            return 503;
        return 413; /* a limit the request itself passed */
    case GRPC_STATUS_UNAVAILABLE:
        return 503;
    case GRPC_STATUS_DEADLINE_EXCEEDED:
        return 504;
    case GRPC_STATUS_CANCELLED:
        return 499; /* nginx's "client closed request": nobody reads it */
    default:
        return 500;
    }
}

void http_status_from_parse(const http1_error *e, rpc_status *st)
{
    grpc_status_code code = GRPC_STATUS_INVALID_ARGUMENT;
    if (e->status == 401) code = GRPC_STATUS_UNAUTHENTICATED;
    if (e->status == 414 || e->status == 431) code = GRPC_STATUS_RESOURCE_EXHAUSTED;
    if (e->status == 501 || e->status == 505) code = GRPC_STATUS_UNIMPLEMENTED;
    rpc_status_set(st, code, e->reason, NULL, "%s", e->message);
}

void http_status_json(const rpc_status *st, json_writer *w)
{
    json_object_open(w);
    json_key(w, "error");
    json_object_open(w);
    json_key(w, "code");
    json_int(w, http_status_of(st));
    json_key(w, "status");
    json_string(w, metrics_code_name(st->code));
    json_key(w, "message");
    json_string(w, st->message);
    if (st->reason[0]) {
        json_key(w, "details");
        json_array_open(w);
        json_object_open(w);
        json_key(w, "@type");
        json_string(w, "type.googleapis.com/google.rpc.ErrorInfo");
        json_key(w, "reason");
        json_string(w, st->reason);
        json_key(w, "domain");
        json_string(w, STATUS_DETAILS_DOMAIN);
        if (st->field[0]) {
            json_key(w, "metadata");
            json_object_open(w);
            json_key(w, "field");
            json_string(w, st->field);
            json_object_close(w);
        }
        json_object_close(w);
        json_array_close(w);
    }
    json_object_close(w);
    json_object_close(w);
}
