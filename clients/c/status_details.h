/*
 * status_details.h — decodes the google.rpc.Status a server puts in the
 * grpc-status-details-bin trailer and lifts its google.rpc.ErrorInfo
 * (reason, domain, metadata "field") into an rpc_status.
 */
#ifndef LMSCORE_CLI_STATUS_DETAILS_H
#define LMSCORE_CLI_STATUS_DETAILS_H

#include "rpc.h"

/* Fills st->reason, st->domain and st->field from the trailing metadata;
 * leaves them empty when there is no (decodable) ErrorInfo. */
void status_details_decode(const grpc_metadata_array *trailing, rpc_status *st);

#endif
