/*
 * request_context.h — who a call is, for its log lines: a request id (the
 * client's x-request-id, or one made here) returned to the client in the
 * response's x-request-id metadata, and the W3C trace context the client
 * sent (traceparent), whose trace id every log line of the call carries.
 * Transport-neutral: the gRPC call layer fills one per call from the
 * request metadata, and an HTTP front end does the same from its headers.
 */
#ifndef LMSCORED_REQUEST_CONTEXT_H
#define LMSCORED_REQUEST_CONTEXT_H

#include <stdbool.h>
#include <stddef.h>

#include "log.h"

#define REQUEST_ID_HEADER  "x-request-id"
#define TRACEPARENT_HEADER "traceparent"
#define REQUEST_ID_MAX_LEN 128 /* longer client ids are replaced by a made one */
#define TRACE_ID_HEX_LEN   32

typedef struct {
    char request_id[REQUEST_ID_MAX_LEN + 1];
    char trace_id[TRACE_ID_HEX_LEN + 1]; /* "" when no valid traceparent came */
} request_context;

/* ctx from the request's x-request-id and traceparent values (each NULL
 * when absent, and not necessarily NUL-terminated: len bytes). A client id
 * is kept when it is 1 to REQUEST_ID_MAX_LEN visible ASCII characters
 * (0x21-0x7e), else a random one (32 lowercase hex digits) is made; a
 * traceparent that is not valid per W3C Trace Context is ignored. */
void request_context_init(request_context *ctx, const char *request_id, size_t request_id_len,
                          const char *traceparent, size_t traceparent_len);

/* The trace id of a W3C traceparent value into trace_id (NUL-terminated);
 * false, with trace_id untouched, when the value is not a valid one. */
bool traceparent_trace_id(const char *value, size_t len, char trace_id[TRACE_ID_HEX_LEN + 1]);

/* Adds request_id, and trace_id when there is one, to r. */
void request_context_log(log_record *r, const request_context *ctx);

#endif
