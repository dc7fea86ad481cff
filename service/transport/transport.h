/*
 * transport/ — the doors and their wire: the call layer that both doors'
 * calls go through (call: gRPC core's op batches, or a sink for a call
 * another door opened), the gRPC server and its completion-queue thread
 * (server), the HTTP/1.1 server and the slow-client-proof listener under it
 * (http_server, http_listener, http1_parser: the request framing,
 * listen_addr), gRPC core's own log
 * messages (grpc_log), TLS (tls), who may
 * call (api_keys), who a call is (request_context), and the wire formats a
 * door reads and writes before any handler runs: the protobuf wire check
 * (proto_wire), the decoding budget (decode_budget), JSON in and out
 * (json_reader, json_writer), a call's status and its rich error model
 * (status_details, http_status).
 *
 * Includes: base/. Knows no handler, no job and no engine call.
 */
#ifndef LMSCORED_TRANSPORT_H
#define LMSCORED_TRANSPORT_H

#include "api_keys.h"
#include "call.h"
#include "grpc_log.h"
#include "listen_addr.h"
#include "server.h"

#endif
