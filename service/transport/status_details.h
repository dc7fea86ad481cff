/*
 * status_details.h — the status a call ends with, and its rich error model:
 * a google.rpc.Status carrying a google.rpc.ErrorInfo {reason, domain
 * "lmscore", metadata {"field": ...}}, sent in the grpc-status-details-bin
 * trailing metadata so clients can branch on the reason.
 */
#ifndef LMSCORED_STATUS_DETAILS_H
#define LMSCORED_STATUS_DETAILS_H

#include <grpc/slice.h>
#include <grpc/status.h>

#include "lmscore.h"

#define STATUS_DETAILS_KEY    "grpc-status-details-bin"
#define STATUS_DETAILS_DOMAIN "lmscore"

typedef struct {
    grpc_status_code code;
    char message[512];
    char reason[48]; /* ErrorInfo.reason; empty: no details are sent */
    char field[64];  /* ErrorInfo.metadata["field"]; may be empty */
} rpc_status;

void rpc_status_ok(rpc_status *st);
void rpc_status_set(rpc_status *st, grpc_status_code code, const char *reason, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Maps an engine error: invalid or unsupported requests → INVALID_ARGUMENT,
 * limits and memory → RESOURCE_EXHAUSTED, cancellation → CANCELLED, the
 * rest → INTERNAL; reason and field carry over. */
void rpc_status_from_error(rpc_status *st, const lms_error *err);

/* The serialized google.rpc.Status for st (a new slice the caller owns). */
grpc_slice status_details_encode(const rpc_status *st);

#endif
