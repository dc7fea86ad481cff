/*
 * rpc.h — the CLI's gRPC plumbing on the core C API: one channel and one
 * completion queue per connection, unary and bidirectional calls driven by
 * tags, protobuf-c messages in and out of byte buffers, and call statuses
 * with the server's google.rpc.ErrorInfo decoded.
 */
#ifndef LMSCORE_CLI_RPC_H
#define LMSCORE_CLI_RPC_H

#include <stdbool.h>
#include <stddef.h>

#include <grpc/grpc.h>
#include <protobuf-c/protobuf-c.h>

/* The most --metadata pairs a command line may give. */
enum { RPC_MAX_METADATA = 16 };

/* How to reach the server, and what every call sends besides its message. */
typedef struct {
    const char *target;    /* a gRPC target: host:port, dns:///host:port, unix:path */
    bool tls;              /* TLS with the system roots, or ca_cert when set */
    const char *ca_cert;   /* PEM file of the roots to trust (implies tls) */
    const char *authority; /* TLS name to verify instead of the target's host */
    bool round_robin;      /* spread calls over every address the target resolves to */
    double timeout_s;      /* per-call deadline; <= 0 means none */
    /* The API key's file (its first key); NULL: $LMSCORE_API_KEY when set,
     * else no key. Every call carries "authorization: Bearer KEY". */
    const char *api_key_file;
    const char *request_id; /* sent as x-request-id; NULL: none (the server makes one) */
    /* "key=value" pairs sent as they are, in order, after the request id;
     * rpc_metadata_check has accepted each */
    const char *metadata[RPC_MAX_METADATA];
    size_t n_metadata;
} rpc_options;

/* The outcome of a call: the gRPC status and, when the server sent one, the
 * google.rpc.ErrorInfo from grpc-status-details-bin. */
typedef struct {
    grpc_status_code code;
    char message[512];
    char reason[64]; /* ErrorInfo.reason, "" when absent */
    char domain[64];
    char field[128];      /* ErrorInfo.metadata["field"], "" when absent */
    char request_id[129]; /* the x-request-id the server answered with, "" when none */
} rpc_status;

typedef struct {
    grpc_channel *channel;
    grpc_completion_queue *cq;
    double timeout_s;
    /* sent with every call: authorization (when there is a key; its value
     * owned), x-request-id, the --metadata pairs */
    grpc_metadata send_md[RPC_MAX_METADATA + 2];
    size_t n_send_md;
    bool has_key; /* send_md[0] is the authorization, its value owned */
} rpc_conn;

/* What every call in flight holds: the call and the buffers its status
 * batch writes into. */
typedef struct {
    grpc_call *call;
    grpc_metadata_array initial_md;
    grpc_metadata_array trailing_md;
    grpc_status_code code;
    grpc_slice details;
} rpc_call;

/* A unary call in flight. */
typedef struct {
    rpc_call base;
    grpc_byte_buffer *response;
} rpc_unary_call;

/* A bidirectional (or server-streaming) call in flight. At most one send and
 * one receive may be outstanding at a time. */
typedef struct {
    rpc_call base;
    grpc_byte_buffer *received; /* set by a completed rpc_stream_recv; NULL at end of stream */
} rpc_stream_call;

/* Whether "key=value" can be sent as call metadata: a lowercase gRPC key
 * (not one of gRPC's own, grpc-*), a value of printable ASCII unless the key
 * ends in -bin. False with the reason in why. */
bool rpc_metadata_check(const char *pair, char *why, size_t why_size);

/* Opens a channel; on failure fills st (code UNKNOWN, the reason in message)
 * and returns false. Must be paired with rpc_close. */
bool rpc_connect(rpc_conn *conn, const rpc_options *opts, rpc_status *st);
void rpc_close(rpc_conn *conn);

/* Serialises msg into a new byte buffer the caller destroys; NULL when out of memory. */
grpc_byte_buffer *rpc_pack(const ProtobufCMessage *msg);
/* Parses bb as a message of type desc; NULL when bb is not one. Free with
 * protobuf_c_message_free_unpacked. */
ProtobufCMessage *rpc_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb);

/* Starts a unary call of method ("/pkg.Service/Method") with request; its
 * completion arrives on conn->cq with tag. request stays the caller's, to
 * destroy once the tag completes; the core moves its bytes out, so each call
 * needs its own buffer (grpc_byte_buffer_copy is cheap). */
bool rpc_unary_start(rpc_conn *conn, rpc_unary_call *uc, const char *method,
                     grpc_byte_buffer *request, void *tag, rpc_status *st);
/* After the tag completed: fills st, moves the response (when OK) into
 * *response (caller destroys) and releases the call. */
void rpc_unary_finish(rpc_unary_call *uc, grpc_byte_buffer **response, rpc_status *st);

/* A blocking unary call: the request message in, the decoded response out
 * (free with protobuf_c_message_free_unpacked). True when the status is OK
 * and the response decoded. */
bool rpc_unary(rpc_conn *conn, const char *method, const ProtobufCMessage *request,
               const ProtobufCMessageDescriptor *response_desc, ProtobufCMessage **response,
               rpc_status *st);

/* Connects, makes one blocking unary call and closes. On failure prints the
 * status as rpc_status_print(what, ...) does and returns false. */
bool rpc_unary_once(const rpc_options *opts, const char *what, const char *method,
                    const ProtobufCMessage *request,
                    const ProtobufCMessageDescriptor *response_desc, ProtobufCMessage **response);

/* Starts a streaming call; status_tag completes on conn->cq when the call
 * ends (then call rpc_stream_finish). */
bool rpc_stream_start(rpc_conn *conn, rpc_stream_call *sc, const char *method, void *status_tag,
                      rpc_status *st);
/* Sends one message; tag completes when it may be destroyed and the next
 * one sent (success false: the call is over, wait for its status). */
bool rpc_stream_send(rpc_stream_call *sc, grpc_byte_buffer *msg, void *tag);
/* Tells the server no more messages follow. */
bool rpc_stream_close_send(rpc_stream_call *sc, void *tag);
/* Asks for the next message; when tag completes, sc->received holds it (the
 * caller destroys it) or NULL at the end of the stream. */
bool rpc_stream_recv(rpc_stream_call *sc, void *tag);
/* Cancels the call (the status then completes with CANCELLED). */
void rpc_stream_cancel(rpc_stream_call *sc);
/* After status_tag completed and no send/recv is outstanding: fills st and
 * releases the call. */
void rpc_stream_finish(rpc_stream_call *sc, rpc_status *st);

/* Prints "lmscore: <what>: CODE: message (reason: r, field: f) (request id:
 * id)" to stderr, the parentheses only where the server sent them. */
void rpc_status_print(const char *what, const rpc_status *st);
/* "OK", "INVALID_ARGUMENT", ... */
const char *rpc_code_name(grpc_status_code code);

/* A deadline timeout_s from now, or infinitely far when timeout_s <= 0. */
gpr_timespec rpc_deadline(double timeout_s);

#endif
