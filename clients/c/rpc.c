/*
 * rpc.c — the CLI's gRPC plumbing: channels and credentials, unary and
 * streaming calls as batches on a completion queue, message (de)serialisation
 * and call statuses.
 */
#include "rpc.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc_security.h>
#include <grpc/support/alloc.h>
#include <grpc/support/time.h>

#include "status_details.h"

__attribute__((format(printf, 3, 4))) static void status_set(rpc_status *st, grpc_status_code code,
                                                             const char *fmt, ...)
{
    memset(st, 0, sizeof *st);
    st->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
}

/* Reads a whole (small) file into a NUL-terminated string. */
static char *read_text_file(const char *path, rpc_status *st)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    while (text) {
        len += fread(text + len, 1, cap - len - 1, f);
        if (len < cap - 1) break;
        char *bigger = realloc(text, cap * 2);
        if (!bigger) {
            free(text);
            text = NULL;
            break;
        }
        text = bigger;
        cap *= 2;
    }
    bool failed = !text || ferror(f);
    fclose(f);
    if (failed) {
        free(text);
        status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "cannot read %s", path);
        return NULL;
    }
    text[len] = '\0';
    return text;
}

/* The first key of an API key file: its first line that is neither blank
 * nor a comment, without surrounding blanks (the daemon's format). */
static char *read_api_key(const char *path, rpc_status *st)
{
    char *text = read_text_file(path, st);
    if (!text) return NULL;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        line += strspn(line, " \t\r");
        size_t len = strcspn(line, " \t\r");
        if (len == 0 || line[0] == '#') continue;
        memmove(text, line, len);
        text[len] = '\0';
        return text;
    }
    free(text);
    status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "%s holds no API key", path);
    return NULL;
}

/* conn->authorization from opts' key file or $LMSCORE_API_KEY; true when
 * there is none either. */
static bool set_api_key(rpc_conn *conn, const rpc_options *opts, rpc_status *st)
{
    char *from_file = opts->api_key_file ? read_api_key(opts->api_key_file, st) : NULL;
    if (opts->api_key_file && !from_file) return false;
    const char *key = from_file ? from_file : getenv("LMSCORE_API_KEY");
    if (key && *key) {
        static const char scheme[] = "Bearer ";
        size_t len = strlen(key);
        grpc_metadata *md = &conn->send_md[conn->n_send_md++];
        md->key = grpc_slice_from_static_string("authorization");
        md->value = grpc_slice_malloc(sizeof scheme - 1 + len);
        uint8_t *value = GRPC_SLICE_START_PTR(md->value);
        memcpy(value, scheme, sizeof scheme - 1);
        memcpy(value + sizeof scheme - 1, key, len);
        conn->has_key = true;
    }
    free(from_file);
    return true;
}

/* The key and value of "key=value", borrowing pair's bytes. */
static grpc_metadata split_pair(const char *pair)
{
    const char *eq = strchr(pair, '=');
    size_t key_len = eq ? (size_t)(eq - pair) : strlen(pair);
    const char *value = eq ? eq + 1 : pair + key_len;
    return (grpc_metadata){.key = grpc_slice_from_static_buffer(pair, key_len),
                           .value = grpc_slice_from_static_buffer(value, strlen(value))};
}

bool rpc_metadata_check(const char *pair, char *why, size_t why_size)
{
    grpc_metadata md = split_pair(pair);
    size_t key_len = GRPC_SLICE_LENGTH(md.key);
    if (!strchr(pair, '=') || key_len == 0)
        snprintf(why, why_size, "\"%s\" is not KEY=VALUE", pair);
    else if (!grpc_header_key_is_legal(md.key))
        snprintf(why, why_size, "\"%.*s\" is no metadata key (lowercase a-z, 0-9, -, _, .)",
                 (int)key_len, pair);
    else if (key_len >= 5 && strncmp(pair, "grpc-", 5) == 0)
        snprintf(why, why_size, "\"%.*s\": grpc-* keys are gRPC's own", (int)key_len, pair);
    else if (!grpc_is_binary_header(md.key) && !grpc_header_nonbin_value_is_legal(md.value))
        snprintf(why, why_size, "the value of %.*s is not printable ASCII (a -bin key takes any)",
                 (int)key_len, pair);
    else
        return true;
    return false;
}

/* conn->send_md after the authorization: the request id, then the pairs. */
static void set_call_metadata(rpc_conn *conn, const rpc_options *opts)
{
    if (opts->request_id)
        conn->send_md[conn->n_send_md++] =
            (grpc_metadata){.key = grpc_slice_from_static_string("x-request-id"),
                            .value = grpc_slice_from_static_string(opts->request_id)};
    for (size_t i = 0; i < opts->n_metadata && i < RPC_MAX_METADATA; i++)
        conn->send_md[conn->n_send_md++] = split_pair(opts->metadata[i]);
}

static grpc_channel_credentials *make_credentials(const rpc_options *opts, rpc_status *st)
{
    if (!opts->tls && !opts->ca_cert) return grpc_insecure_credentials_create();
    char *roots = NULL;
    if (opts->ca_cert && !(roots = read_text_file(opts->ca_cert, st))) return NULL;
    grpc_channel_credentials *creds = grpc_ssl_credentials_create(roots, NULL, NULL, NULL);
    free(roots);
    if (!creds) status_set(st, GRPC_STATUS_INVALID_ARGUMENT, "%s", "cannot set up TLS");
    return creds;
}

bool rpc_connect(rpc_conn *conn, const rpc_options *opts, rpc_status *st)
{
    memset(conn, 0, sizeof *conn);
    if (!set_api_key(conn, opts, st)) return false;
    set_call_metadata(conn, opts);
    grpc_channel_credentials *creds = make_credentials(opts, st);
    if (!creds) {
        rpc_close(conn);
        return false;
    }

    grpc_arg args[5];
    size_t n = 0;
    /* Results of a 10,000-item Score are larger than gRPC's 4 MiB default. */
    args[n].type = GRPC_ARG_INTEGER;
    args[n].key = GRPC_ARG_MAX_RECEIVE_MESSAGE_LENGTH;
    args[n++].value.integer = -1;
    /* A CLI waiting for a starting server (health --wait) should notice it
     * within a second, not after gRPC's default backoff of up to 2 minutes. */
    args[n].type = GRPC_ARG_INTEGER;
    args[n].key = GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS;
    args[n++].value.integer = 100;
    args[n].type = GRPC_ARG_INTEGER;
    args[n].key = GRPC_ARG_MAX_RECONNECT_BACKOFF_MS;
    args[n++].value.integer = 1000;
    if (opts->round_robin) {
        args[n].type = GRPC_ARG_STRING;
        args[n].key = GRPC_ARG_SERVICE_CONFIG;
        args[n++].value.string = "{\"loadBalancingConfig\": [{\"round_robin\": {}}]}";
    }
    if (opts->authority) {
        args[n].type = GRPC_ARG_STRING;
        args[n].key = GRPC_SSL_TARGET_NAME_OVERRIDE_ARG;
        args[n++].value.string = (char *)opts->authority;
    }
    grpc_channel_args channel_args = {.num_args = n, .args = args};
    conn->channel = grpc_channel_create(opts->target, creds, &channel_args);
    grpc_channel_credentials_release(creds);
    conn->cq = grpc_completion_queue_create_for_next(NULL);
    conn->timeout_s = opts->timeout_s;
    if (!conn->channel || !conn->cq) {
        rpc_close(conn);
        status_set(st, GRPC_STATUS_UNKNOWN, "cannot create a channel to %s", opts->target);
        return false;
    }
    return true;
}

void rpc_close(rpc_conn *conn)
{
    if (conn->channel) grpc_channel_destroy(conn->channel);
    if (conn->cq) {
        grpc_completion_queue_shutdown(conn->cq);
        while (
            grpc_completion_queue_next(conn->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
            GRPC_QUEUE_SHUTDOWN) {
        }
        grpc_completion_queue_destroy(conn->cq);
    }
    if (conn->has_key) grpc_slice_unref(conn->send_md[0].value);
    memset(conn, 0, sizeof *conn);
}

grpc_byte_buffer *rpc_pack(const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    grpc_slice slice = grpc_slice_malloc(len);
    protobuf_c_message_pack(msg, GRPC_SLICE_START_PTR(slice));
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&slice, 1);
    grpc_slice_unref(slice);
    return bb;
}

ProtobufCMessage *rpc_unpack(const ProtobufCMessageDescriptor *desc, grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, bb)) return NULL;
    grpc_slice all = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    ProtobufCMessage *msg =
        protobuf_c_message_unpack(desc, NULL, GRPC_SLICE_LENGTH(all), GRPC_SLICE_START_PTR(all));
    grpc_slice_unref(all);
    return msg;
}

gpr_timespec rpc_deadline(double timeout_s)
{
    if (timeout_s <= 0) return gpr_inf_future(GPR_CLOCK_REALTIME);
    return gpr_time_add(gpr_now(GPR_CLOCK_REALTIME),
                        gpr_time_from_micros((int64_t)(timeout_s * 1e6), GPR_TIMESPAN));
}

/* Creates the call and starts the batch ops[0..n) plus the ops every call
 * has (send initial metadata, receive initial metadata and status); ops must
 * have room for 3 more. tag completes when the whole batch has. */
static bool begin_call(rpc_conn *conn, rpc_call *c, const char *method, grpc_op *ops, size_t n,
                       void *tag, rpc_status *st)
{
    memset(c, 0, sizeof *c);
    c->call = grpc_channel_create_call(conn->channel, NULL, GRPC_PROPAGATE_DEFAULTS, conn->cq,
                                       grpc_slice_from_static_string(method), NULL,
                                       rpc_deadline(conn->timeout_s), NULL);
    if (!c->call) {
        status_set(st, GRPC_STATUS_INTERNAL, "cannot create a call to %s", method);
        return false;
    }
    grpc_metadata_array_init(&c->initial_md);
    grpc_metadata_array_init(&c->trailing_md);
    ops[n].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[n].data.send_initial_metadata.count = conn->n_send_md;
    ops[n].data.send_initial_metadata.metadata = conn->send_md;
    ops[n + 1].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[n + 1].data.recv_initial_metadata.recv_initial_metadata = &c->initial_md;
    ops[n + 2].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[n + 2].data.recv_status_on_client.trailing_metadata = &c->trailing_md;
    ops[n + 2].data.recv_status_on_client.status = &c->code;
    ops[n + 2].data.recv_status_on_client.status_details = &c->details;
    if (grpc_call_start_batch(c->call, ops, n + 3, tag, NULL) != GRPC_CALL_OK) {
        grpc_metadata_array_destroy(&c->initial_md);
        grpc_metadata_array_destroy(&c->trailing_md);
        grpc_call_unref(c->call);
        c->call = NULL;
        status_set(st, GRPC_STATUS_INTERNAL, "cannot start %s", method);
        return false;
    }
    return true;
}

/* The first x-request-id of the response's initial metadata, else of its
 * trailing metadata (a call refused before it began has only trailers). */
static void find_request_id(const rpc_call *c, rpc_status *st)
{
    const grpc_metadata_array *arrays[] = {&c->initial_md, &c->trailing_md};
    for (size_t a = 0; a < 2; a++)
        for (size_t i = 0; i < arrays[a]->count; i++) {
            const grpc_metadata *md = &arrays[a]->metadata[i];
            if (!grpc_slice_str_cmp(md->key, "x-request-id")) {
                snprintf(st->request_id, sizeof st->request_id, "%.*s",
                         (int)GRPC_SLICE_LENGTH(md->value),
                         (const char *)GRPC_SLICE_START_PTR(md->value));
                return;
            }
        }
}

/* After the status arrived: fills st and releases the call. */
static void end_call(rpc_call *c, rpc_status *st)
{
    memset(st, 0, sizeof *st);
    st->code = c->code;
    size_t len = GRPC_SLICE_LENGTH(c->details);
    if (len >= sizeof st->message) len = sizeof st->message - 1;
    memcpy(st->message, GRPC_SLICE_START_PTR(c->details), len);
    st->message[len] = '\0';
    if (c->code != GRPC_STATUS_OK) status_details_decode(&c->trailing_md, st);
    find_request_id(c, st);
    grpc_slice_unref(c->details);
    grpc_metadata_array_destroy(&c->initial_md);
    grpc_metadata_array_destroy(&c->trailing_md);
    grpc_call_unref(c->call);
    memset(c, 0, sizeof *c);
}

bool rpc_unary_start(rpc_conn *conn, rpc_unary_call *uc, const char *method,
                     grpc_byte_buffer *request, void *tag, rpc_status *st)
{
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    uc->response = NULL;
    ops[0].op = GRPC_OP_SEND_MESSAGE;
    ops[0].data.send_message.send_message = request;
    ops[1].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[2].op = GRPC_OP_RECV_MESSAGE;
    ops[2].data.recv_message.recv_message = &uc->response;
    return begin_call(conn, &uc->base, method, ops, 3, tag, st);
}

void rpc_unary_finish(rpc_unary_call *uc, grpc_byte_buffer **response, rpc_status *st)
{
    end_call(&uc->base, st);
    if (st->code == GRPC_STATUS_OK && !uc->response) {
        st->code = GRPC_STATUS_INTERNAL;
        snprintf(st->message, sizeof st->message, "the server sent no response message");
    }
    *response = st->code == GRPC_STATUS_OK ? uc->response : NULL;
    if (!*response && uc->response) grpc_byte_buffer_destroy(uc->response);
    uc->response = NULL;
}

/* Waits on conn->cq for tag, the only operation this connection has in flight. */
static bool wait_for(rpc_conn *conn, void *tag)
{
    grpc_event ev;
    do {
        ev = grpc_completion_queue_next(conn->cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    } while (ev.type == GRPC_OP_COMPLETE && ev.tag != tag);
    return ev.type == GRPC_OP_COMPLETE && ev.success;
}

bool rpc_unary(rpc_conn *conn, const char *method, const ProtobufCMessage *request,
               const ProtobufCMessageDescriptor *response_desc, ProtobufCMessage **response,
               rpc_status *st)
{
    *response = NULL;
    grpc_byte_buffer *req = rpc_pack(request);
    if (!req) {
        status_set(st, GRPC_STATUS_RESOURCE_EXHAUSTED, "%s", "out of memory");
        return false;
    }
    rpc_unary_call uc;
    bool started = rpc_unary_start(conn, &uc, method, req, &uc, st);
    if (started) {
        wait_for(conn, &uc);
        grpc_byte_buffer *resp;
        rpc_unary_finish(&uc, &resp, st);
        if (resp) {
            *response = rpc_unpack(response_desc, resp);
            grpc_byte_buffer_destroy(resp);
            if (!*response)
                status_set(st, GRPC_STATUS_INTERNAL, "cannot decode the %s response", method);
        }
    }
    grpc_byte_buffer_destroy(req);
    return *response != NULL;
}

bool rpc_unary_once(const rpc_options *opts, const char *what, const char *method,
                    const ProtobufCMessage *request,
                    const ProtobufCMessageDescriptor *response_desc, ProtobufCMessage **response)
{
    rpc_conn conn;
    rpc_status st;
    *response = NULL;
    if (rpc_connect(&conn, opts, &st)) {
        rpc_unary(&conn, method, request, response_desc, response, &st);
        rpc_close(&conn);
    }
    if (!*response) rpc_status_print(what, &st);
    return *response != NULL;
}

bool rpc_stream_start(rpc_conn *conn, rpc_stream_call *sc, const char *method, void *status_tag,
                      rpc_status *st)
{
    grpc_op ops[3];
    memset(ops, 0, sizeof ops);
    sc->received = NULL;
    return begin_call(conn, &sc->base, method, ops, 0, status_tag, st);
}

static bool start_one(rpc_stream_call *sc, const grpc_op *op, void *tag)
{
    return grpc_call_start_batch(sc->base.call, op, 1, tag, NULL) == GRPC_CALL_OK;
}

bool rpc_stream_send(rpc_stream_call *sc, grpc_byte_buffer *msg, void *tag)
{
    grpc_op op = {.op = GRPC_OP_SEND_MESSAGE};
    op.data.send_message.send_message = msg;
    return start_one(sc, &op, tag);
}

bool rpc_stream_close_send(rpc_stream_call *sc, void *tag)
{
    grpc_op op = {.op = GRPC_OP_SEND_CLOSE_FROM_CLIENT};
    return start_one(sc, &op, tag);
}

bool rpc_stream_recv(rpc_stream_call *sc, void *tag)
{
    grpc_op op = {.op = GRPC_OP_RECV_MESSAGE};
    sc->received = NULL;
    op.data.recv_message.recv_message = &sc->received;
    return start_one(sc, &op, tag);
}

void rpc_stream_cancel(rpc_stream_call *sc)
{
    grpc_call_cancel(sc->base.call, NULL);
}

void rpc_stream_finish(rpc_stream_call *sc, rpc_status *st)
{
    end_call(&sc->base, st);
}

const char *rpc_code_name(grpc_status_code code)
{
    static const char *const names[] = {
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    };
    if ((unsigned)code < sizeof names / sizeof names[0]) return names[code];
    return "UNKNOWN";
}

void rpc_status_print(const char *what, const rpc_status *st)
{
    fprintf(stderr, "lmscore: %s: %s: %s", what, rpc_code_name(st->code), st->message);
    if (st->reason[0]) {
        fprintf(stderr, " (reason: %s", st->reason);
        if (st->field[0]) fprintf(stderr, ", field: %s", st->field);
        fputc(')', stderr);
    }
    if (st->request_id[0]) fprintf(stderr, " (request id: %s)", st->request_id);
    fputc('\n', stderr);
}
