/*
 * call.h — the call-state layer: the one place that knows the op batches
 * of unary, server-streaming and bidirectional calls on the gRPC core API,
 * and turns completion-queue events into handler steps.
 *
 * A handler (one per RPC method) sees its call through a few steps:
 * on_message for each request message (for a bidi call, NULL once the
 * client half-closes; a bidi handler asks for each next message with
 * call_request_next), on_sent when its streamed message has left, and
 * on_close once the call is over (cancelled tells whether the client
 * cancelled, the deadline passed or the connection broke). All three run on
 * the completion-queue thread, so they must not block.
 *
 * Sending is thread-safe, never blocks and is flow-controlled: at most one
 * message is in flight per call. call_send refuses a second one
 * (CALL_BUSY); call_send_queued queues it behind, and the producer bounds
 * the queue itself: call_send_backlog says how many wait, and on_sent runs
 * as each message leaves (a producer that waits for its client this way
 * holds no thread meanwhile). call_finish sends the status after the
 * message in flight, once: an OK status also after the queued ones, any
 * other drops them.
 *
 * Every call has a request context (request_context.h): the client's
 * x-request-id or a made one, sent back in the response's initial
 * metadata, and the trace id of its traceparent; call_log_begin puts both
 * on each log line about the call.
 *
 * Lifetime: a call is freed when its last reference goes — the layer holds
 * references for its outstanding batches; a handler or job that keeps the
 * call beyond a step takes its own with call_ref.
 */
#ifndef LMSCORED_CALL_H
#define LMSCORED_CALL_H

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "log.h"
#include "request_context.h"
#include "status_details.h"

/* Every completion-queue tag is one of these; the CQ loop calls done. */
typedef struct cq_tag {
    void (*done)(struct cq_tag *tag, bool ok);
} cq_tag;

typedef enum { CALL_UNARY, CALL_SERVER_STREAMING, CALL_BIDI_STREAMING } call_shape;

typedef struct call call;

typedef struct call_handler {
    const char *path; /* "/package.Service/Method" */
    call_shape shape;
    bool counts_as_scoring; /* an admitted call counts in ServerStats.in_flight_calls */
    bool open;              /* served without an API key (health probes carry none) */
    void *ctx;              /* the handler module's context, for call_ctx */
    /* A gRPC method's request messages; NULL for the handler of calls that
     * call_open starts. */
    void (*on_message)(call *c, const uint8_t *msg, size_t len);
    void (*on_sent)(call *c);                  /* optional */
    void (*on_close)(call *c, bool cancelled); /* optional */
    void (*free_state)(void *state);           /* optional; frees call_state */
} call_handler;

typedef enum { CALL_SENT, CALL_BUSY, CALL_CLOSED } call_send_result;

/* Largest message the daemon receives or sends, set once at startup: a
 * bigger request message ends its call with RESOURCE_EXHAUSTED (reason
 * message_too_large) before any handler sees it, a bigger response with
 * RESOURCE_EXHAUSTED (reason response_too_large). Decoding one request
 * message may allocate 8 times that, at least 64 MiB (more: reason
 * message_too_large too). */
void call_layer_init(int64_t max_message_bytes);
/* Calls admitted (call_admit) whose status has not been sent yet. */
int call_layer_admitted(void);
/* When the last call's status was decided (monotonic ns; 0: none yet). */
int64_t call_layer_last_end_ns(void);
/* From now on, every call's "call finished" record is logged at info, not
 * debug (the drain: every call it sees, with its outcome). */
void call_layer_log_every_call(void);
/* Ends every call still running with st (the shutdown's last word). */
void call_layer_end_all(const rpc_status *st);
/* Waits up to timeout_ms for every accepted call to be over; returns how
 * many are still alive. */
size_t call_layer_wait_idle(int64_t timeout_ms);

/* A call that comes by another door than gRPC (the HTTP server's): its
 * handler's work is started by its door, not through on_message, and its
 * end goes to the sink. */
typedef struct {
    /* Called once, on the thread that ends the call and outside its lock,
     * with the status and, when it is OK, the reply (valid only during the
     * callback, like the unary reply a gRPC call would send). */
    void (*on_end)(call *c, void *ctx, const rpc_status *st, const ProtobufCMessage *reply);
    void *ctx;
} call_sink;

/* Opens a call of handler h (NULL: a request for nothing served, to be
 * ended at once) whose end goes to sink: counted, logged and metered like
 * a gRPC call under h->path, with method as its name and context (which
 * the door read from its request, and returns to its client) on its log
 * lines. It has no deadline; it cannot stream (call_send answers
 * CALL_CLOSED). The caller holds the one reference returned; NULL when out
 * of memory. */
call *call_open(const call_handler *h, const char *method, const request_context *context,
                const call_sink *sink);
/* The client of a call_open'ed call went away: its work stops as a
 * cancelled gRPC call's does (call_should_stop, on_close). */
void call_cancel(call *c);
/* The answer of a call_open'ed call was not sent whole (its connection
 * closed first): its log record says CANCELLED, what the client saw, and
 * names the status decided (unsent); the counters keep the status. */
void call_answer_lost(call *c);

/* For the server: takes over gc (one reference) and starts the handler's
 * batches. A NULL handler answers UNIMPLEMENTED; a call refused (by the API
 * key check) ends at once with that status, its handler never called.
 * request_metadata (the call's, read during this call only) gives the
 * request context. */
void call_accept(grpc_call *gc, const call_handler *h, const char *method, gpr_timespec deadline,
                 const grpc_metadata_array *request_metadata, const rpc_status *refused);

void *call_ctx(const call *c);
void *call_state(const call *c);
void call_set_state(call *c, void *state);
/* The call's request id (its x-request-id). */
const char *call_request_id(const call *c);
/* What the call was opened as: a gRPC method's path, or an HTTP call's
 * "METHOD /path" (cut to 127 bytes). */
const char *call_method(const call *c);
/* The call's method as metrics_method_index numbers it. */
int call_metrics_method(const call *c);
/* log_begin for a line about c: the method, request id and trace id first. */
void call_log_begin(log_record *r, const call *c, int priority, const char *message);
void call_ref(call *c);
void call_unref(call *c);

/* Counts c as admitted work from now until its status is sent: the drain
 * waits for admitted calls, and those of a counts_as_scoring handler show
 * in ServerStats.in_flight_calls. */
void call_admit(call *c);

/* True once the client cancelled, the connection broke, the deadline
 * passed or the call was ended: work for the call should stop. */
bool call_should_stop(const call *c);
bool call_deadline_passed(const call *c);
/* DEADLINE_EXCEEDED or CANCELLED, for work stopped by call_should_stop. */
void call_stopped_status(const call *c, rpc_status *st);

/* Bidi: read the next request message (delivered to on_message). */
void call_request_next(call *c);

call_send_result call_send(call *c, const ProtobufCMessage *msg);
call_send_result call_send_queued(call *c, const ProtobufCMessage *msg);
/* Messages queued behind the one in flight. */
int call_send_backlog(call *c);
/* Ends the call with msg as its last message and an OK status, sent
 * after the message in flight (never blocks): the unary response, or a
 * stream's closing summary. */
void call_reply(call *c, const ProtobufCMessage *msg);
/* Decodes a request message after proto_wire_check; on failure ends the
 * call with INVALID_ARGUMENT (reason malformed_request, or invalid_utf8 /
 * nul_in_text naming the string field), or RESOURCE_EXHAUSTED
 * (message_too_large) past the decoding budget, and returns NULL. Free the
 * result with protobuf_c_message_free_unpacked(m, NULL). */
ProtobufCMessage *call_unpack(call *c, const ProtobufCMessageDescriptor *desc, const uint8_t *msg,
                              size_t len);
/* Ends the call with st (the first call wins; later ones are ignored). */
void call_finish(call *c, const rpc_status *st);

#endif
