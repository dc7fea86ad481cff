/*
 * test_call.c — call.c over a real gRPC core server (server.c) and a gRPC
 * core client in this process: a unary reply, a stream's queued messages
 * arriving in order before its OK, an error's status with its ErrorInfo
 * details, a refusal of an oversized message before any handler sees it,
 * an unknown method, and the layer's counts settling once calls are over;
 * and calls another door opens (call_open): their end into the sink, once,
 * the reply's size limit, the client going away (its CANCELLED counted
 * before its admission ends), and the shutdown's end.
 */
#include <grpc/byte_buffer.h>
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "call.h"
#include "lmscore/v1/score.pb-c.h"
#include "metrics.h"
#include "server.h"

#define MAX_MESSAGE 4096
#define STREAMED    5

/* Echo: a TokenizeRequest answered with as many ids as its text has bytes. */
static void on_echo(call *c, const uint8_t *msg, size_t len)
{
    Lmscore__V1__TokenizeRequest *req = (Lmscore__V1__TokenizeRequest *)call_unpack(
        c, &lmscore__v1__tokenize_request__descriptor, msg, len);
    if (!req) return;
    int32_t ids[64] = {0};
    Lmscore__V1__TokenizeResponse resp = LMSCORE__V1__TOKENIZE_RESPONSE__INIT;
    resp.n_token_ids = strlen(req->text) < 64 ? strlen(req->text) : 64;
    resp.token_ids = ids;
    protobuf_c_message_free_unpacked(&req->base, NULL);
    call_reply(c, &resp.base);
}

/* Stream: STREAMED messages of 1..STREAMED ids, queued at once, then a
 * last one of 0 ids with OK. */
static void on_stream(call *c, const uint8_t *msg, size_t len)
{
    (void)msg;
    (void)len;
    int32_t ids[STREAMED] = {0};
    Lmscore__V1__TokenizeResponse resp = LMSCORE__V1__TOKENIZE_RESPONSE__INIT;
    resp.token_ids = ids;
    for (int i = 1; i <= STREAMED; i++) {
        resp.n_token_ids = (size_t)i;
        assert_int_equal(call_send_queued(c, &resp.base), CALL_SENT);
        if (i > 1) assert_int_equal(call_send(c, &resp.base), CALL_BUSY); /* one in flight */
    }
    resp.n_token_ids = 0;
    call_reply(c, &resp.base);
}

static void on_fail(call *c, const uint8_t *msg, size_t len)
{
    (void)msg;
    (void)len;
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_FAILED_PRECONDITION, "test_reason", "field.x", "it failed");
    call_finish(c, &st);
    rpc_status_set(&st, GRPC_STATUS_INTERNAL, NULL, NULL, "ignored: the first end wins");
    call_finish(c, &st);
}

static const call_handler echo = {.path = "/t.T/Echo", .shape = CALL_UNARY, .on_message = on_echo};
static const call_handler stream = {
    .path = "/t.T/Stream", .shape = CALL_SERVER_STREAMING, .on_message = on_stream};
static const call_handler fail = {.path = "/t.T/Fail", .shape = CALL_UNARY, .on_message = on_fail};

typedef struct {
    server *srv;
    grpc_channel *channel;
    grpc_completion_queue *cq;
} fixture;

static int setup(void **state)
{
    static fixture f;
    static const call_handler *handlers[] = {&echo, &stream, &fail};
    call_layer_init(MAX_MESSAGE);
    grpc_init();
    server_options so = {.listen = "127.0.0.1:0",
                         .max_message_bytes = MAX_MESSAGE,
                         .max_receive_buffer = 64 << 20,
                         .connections = {.max_age_grace_ms = 1000,
                                         .keepalive_time_ms = 60000,
                                         .keepalive_min_time_ms = 10000}};
    lms_error err = {0};
    if (server_start(&so, handlers, 3, &f.srv, &err) != LMS_OK) return -1;
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", server_port(f.srv));
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    f.channel = grpc_channel_create(target, creds, NULL);
    grpc_channel_credentials_release(creds);
    f.cq = grpc_completion_queue_create_for_pluck(NULL);
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    grpc_channel_destroy(f->channel);
    grpc_completion_queue_shutdown(f->cq);
    grpc_completion_queue_destroy(f->cq);
    server_shutdown(f->srv, NULL, 1000);
    server_destroy(f->srv);
    grpc_shutdown_blocking();
    return 0;
}

/* What a client saw of one call. */
typedef struct {
    grpc_status_code code;
    char details[256];
    bool has_error_info;
    int n_messages;
    size_t ids[8]; /* n_token_ids of each TokenizeResponse received */
} outcome;

static void pluck(fixture *f, void *tag)
{
    grpc_event ev =
        grpc_completion_queue_pluck(f->cq, tag, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    assert_int_equal(ev.type, GRPC_OP_COMPLETE);
}

/* One call of method with request bytes req (NULL: send nothing),
 * reading every response message. */
static outcome client_call(fixture *f, const char *method, const uint8_t *req, size_t len)
{
    outcome out = {0};
    grpc_slice path = grpc_slice_from_static_string(method);
    grpc_call *gc = grpc_channel_create_call(f->channel, NULL, GRPC_PROPAGATE_DEFAULTS, f->cq, path,
                                             NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_slice details;
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    size_t n = 0;
    ops[n++].op = GRPC_OP_SEND_INITIAL_METADATA;
    grpc_slice payload = grpc_slice_from_copied_buffer((const char *)req, len);
    grpc_byte_buffer *bb = grpc_raw_byte_buffer_create(&payload, 1);
    grpc_slice_unref(payload);
    ops[n].op = GRPC_OP_SEND_MESSAGE;
    ops[n++].data.send_message.send_message = bb;
    ops[n++].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[n].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[n++].data.recv_initial_metadata.recv_initial_metadata = &initial;
    assert_int_equal(grpc_call_start_batch(gc, ops, n, (void *)1, NULL), GRPC_CALL_OK);
    pluck(f, (void *)1);
    grpc_byte_buffer_destroy(bb);
    for (;;) {
        grpc_byte_buffer *got = NULL;
        grpc_op recv;
        memset(&recv, 0, sizeof recv);
        recv.op = GRPC_OP_RECV_MESSAGE;
        recv.data.recv_message.recv_message = &got;
        assert_int_equal(grpc_call_start_batch(gc, &recv, 1, (void *)2, NULL), GRPC_CALL_OK);
        pluck(f, (void *)2);
        if (!got) break;
        grpc_byte_buffer_reader reader;
        assert_true(grpc_byte_buffer_reader_init(&reader, got));
        grpc_slice s = grpc_byte_buffer_reader_readall(&reader);
        grpc_byte_buffer_reader_destroy(&reader);
        Lmscore__V1__TokenizeResponse *r = lmscore__v1__tokenize_response__unpack(
            NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
        assert_non_null(r);
        if (out.n_messages < 8) out.ids[out.n_messages] = r->n_token_ids;
        out.n_messages++;
        lmscore__v1__tokenize_response__free_unpacked(r, NULL);
        grpc_slice_unref(s);
        grpc_byte_buffer_destroy(got);
    }
    grpc_op status;
    memset(&status, 0, sizeof status);
    status.op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    status.data.recv_status_on_client.trailing_metadata = &trailing;
    status.data.recv_status_on_client.status = &out.code;
    status.data.recv_status_on_client.status_details = &details;
    assert_int_equal(grpc_call_start_batch(gc, &status, 1, (void *)3, NULL), GRPC_CALL_OK);
    pluck(f, (void *)3);
    snprintf(out.details, sizeof out.details, "%.*s", (int)GRPC_SLICE_LENGTH(details),
             (const char *)GRPC_SLICE_START_PTR(details));
    for (size_t i = 0; i < trailing.count; i++)
        out.has_error_info |= grpc_slice_str_cmp(trailing.metadata[i].key, STATUS_DETAILS_KEY) == 0;
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(gc);
    return out;
}

static outcome call_with_text(fixture *f, const char *method, const char *text)
{
    Lmscore__V1__TokenizeRequest req = LMSCORE__V1__TOKENIZE_REQUEST__INIT;
    req.text = (char *)text;
    size_t len = lmscore__v1__tokenize_request__get_packed_size(&req);
    uint8_t *buf = malloc(len ? len : 1);
    lmscore__v1__tokenize_request__pack(&req, buf);
    outcome out = client_call(f, method, buf, len);
    free(buf);
    return out;
}

static void test_unary_reply(void **state)
{
    outcome o = call_with_text(*state, "/t.T/Echo", "hello");
    assert_int_equal(o.code, GRPC_STATUS_OK);
    assert_int_equal(o.n_messages, 1);
    assert_int_equal(o.ids[0], 5);
}

static void test_queued_messages_arrive_in_order_before_ok(void **state)
{
    outcome o = call_with_text(*state, "/t.T/Stream", "");
    assert_int_equal(o.code, GRPC_STATUS_OK);
    assert_int_equal(o.n_messages, STREAMED + 1);
    for (int i = 0; i < STREAMED; i++)
        assert_int_equal(o.ids[i], i + 1);
    assert_int_equal(o.ids[STREAMED], 0);
}

static void test_error_status_carries_details_and_the_first_end_wins(void **state)
{
    outcome o = call_with_text(*state, "/t.T/Fail", "x");
    assert_int_equal(o.code, GRPC_STATUS_FAILED_PRECONDITION);
    assert_string_equal(o.details, "it failed");
    assert_true(o.has_error_info);
}

static void test_oversized_and_malformed_messages_are_refused(void **state)
{
    char *big = malloc(MAX_MESSAGE + 100);
    memset(big, 'a', MAX_MESSAGE + 99);
    big[MAX_MESSAGE + 99] = '\0';
    outcome o = call_with_text(*state, "/t.T/Echo", big);
    free(big);
    assert_int_equal(o.code, GRPC_STATUS_RESOURCE_EXHAUSTED);
    assert_true(o.has_error_info);
    assert_non_null(strstr(o.details, "exceeds the server's max message size"));

    const uint8_t junk[] = {0x0a, 0x50, 'x'}; /* a string field longer than the message */
    o = client_call(*state, "/t.T/Echo", junk, sizeof junk);
    assert_int_equal(o.code, GRPC_STATUS_INVALID_ARGUMENT);
    assert_true(o.has_error_info);
}

static void test_unknown_method_and_settled_counts(void **state)
{
    outcome o = call_with_text(*state, "/t.T/Nothing", "x");
    assert_int_equal(o.code, GRPC_STATUS_UNIMPLEMENTED);
    assert_int_equal(call_layer_wait_idle(5000), 0);
    assert_int_equal(call_layer_admitted(), 0);
}

/* What a sink saw of a call_open'ed call. */
typedef struct {
    int ends;
    grpc_status_code code;
    char reason[48];
    size_t reply_ids; /* the TokenizeResponse's ids, when OK */
} sunk;

static void on_end(call *c, void *ctx, const rpc_status *st, const ProtobufCMessage *reply)
{
    (void)c;
    sunk *s = ctx;
    s->ends++;
    s->code = st->code;
    snprintf(s->reason, sizeof s->reason, "%s", st->reason);
    assert_true((st->code == GRPC_STATUS_OK) == (reply != NULL));
    if (reply) s->reply_ids = ((const Lmscore__V1__TokenizeResponse *)reply)->n_token_ids;
}

static int closes;

static void on_local_close(call *c, bool cancelled)
{
    (void)c;
    assert_true(cancelled);
    closes++;
}

static const call_handler local = {.path = "/t.T/Local",
                                   .shape = CALL_UNARY,
                                   .counts_as_scoring = true,
                                   .on_close = on_local_close};

static call *open_local(sunk *s)
{
    request_context ctx;
    request_context_init(&ctx, "local-1", 7, NULL, 0);
    call_sink sink = {.on_end = on_end, .ctx = s};
    call *c = call_open(&local, "POST /local", &ctx, &sink);
    assert_non_null(c);
    return c;
}

static void test_an_opened_call_ends_into_its_sink_once(void **state)
{
    (void)state;
    sunk s = {0};
    call *c = open_local(&s);
    call_admit(c);
    assert_int_equal(call_layer_admitted(), 1);
    assert_false(call_should_stop(c));
    int32_t ids[3] = {0};
    Lmscore__V1__TokenizeResponse resp = LMSCORE__V1__TOKENIZE_RESPONSE__INIT;
    resp.n_token_ids = 3;
    resp.token_ids = ids;
    assert_int_equal(call_send(c, &resp.base), CALL_CLOSED); /* no stream */
    call_reply(c, &resp.base);
    rpc_status st;
    rpc_status_set(&st, GRPC_STATUS_INTERNAL, NULL, NULL, "ignored: the first end wins");
    call_finish(c, &st);
    assert_int_equal(s.ends, 1);
    assert_int_equal(s.code, GRPC_STATUS_OK);
    assert_int_equal(s.reply_ids, 3);
    assert_int_equal(call_layer_admitted(), 0); /* left before the sink ran */
    assert_true(call_should_stop(c));
    call_unref(c);
}

static void test_an_opened_call_reply_over_the_limit_is_refused(void **state)
{
    (void)state;
    sunk s = {0};
    call *c = open_local(&s);
    static int32_t ids[MAX_MESSAGE];
    Lmscore__V1__TokenizeResponse resp = LMSCORE__V1__TOKENIZE_RESPONSE__INIT;
    resp.n_token_ids = MAX_MESSAGE;
    resp.token_ids = ids;
    call_reply(c, &resp.base);
    assert_int_equal(s.ends, 1);
    assert_int_equal(s.code, GRPC_STATUS_RESOURCE_EXHAUSTED);
    assert_string_equal(s.reason, "response_too_large");
    call_unref(c);
}

static void test_an_opened_call_stops_when_its_client_goes_or_the_server_ends_it(void **state)
{
    (void)state;
    sunk s = {0};
    call *c = open_local(&s);
    closes = 0;
    call_cancel(c);
    call_cancel(c);
    assert_int_equal(closes, 1);
    assert_true(call_should_stop(c));
    rpc_status st;
    call_stopped_status(c, &st);
    assert_int_equal(st.code, GRPC_STATUS_CANCELLED);
    assert_int_equal(s.ends, 0); /* the work's end says so, not the cancel */

    sunk other = {0};
    call *d = open_local(&other);
    rpc_status_set(&st, GRPC_STATUS_UNAVAILABLE, "draining", NULL, "shutting down");
    call_layer_end_all(&st);
    assert_int_equal(other.ends, 1);
    assert_int_equal(other.code, GRPC_STATUS_UNAVAILABLE);
    assert_string_equal(other.reason, "draining");
    assert_int_equal(s.ends, 1); /* the cancelled one too */
    call_unref(c);
    call_unref(d);
    assert_int_equal(call_layer_wait_idle(5000), 0);
}

/* A call its client stopped, ended by its work while a reference is still
 * held (the HTTP exchange's): once nothing is in flight, the metrics hold
 * its CANCELLED outcome already, not only when the last reference goes. */
static void test_a_stopped_call_is_counted_before_its_admission_ends(void **state)
{
    (void)state;
    static metrics_detail before, after;
    const int method = metrics_method_index(local.path);
    metrics_detail_get(&before);
    sunk s = {0};
    call *c = open_local(&s);
    call_admit(c);
    call_ref(c); /* the exchange's reference, given back after the end */
    call_cancel(c);
    rpc_status st;
    call_stopped_status(c, &st);
    call_finish(c, &st);
    assert_int_equal(s.ends, 1);
    assert_int_equal(s.code, GRPC_STATUS_CANCELLED);
    metrics_snapshot snap;
    metrics_snapshot_get(&snap);
    assert_int_equal(snap.in_flight_calls, 0);
    assert_int_equal(call_layer_admitted(), 0);
    metrics_detail_get(&after);
    assert_int_equal(after.finished[method][GRPC_STATUS_CANCELLED],
                     before.finished[method][GRPC_STATUS_CANCELLED] + 1);
    call_unref(c);
    call_unref(c);
    metrics_detail_get(&after); /* counted once */
    assert_int_equal(after.finished[method][GRPC_STATUS_CANCELLED],
                     before.finished[method][GRPC_STATUS_CANCELLED] + 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unary_reply),
        cmocka_unit_test(test_queued_messages_arrive_in_order_before_ok),
        cmocka_unit_test(test_error_status_carries_details_and_the_first_end_wins),
        cmocka_unit_test(test_oversized_and_malformed_messages_are_refused),
        cmocka_unit_test(test_unknown_method_and_settled_counts),
        cmocka_unit_test(test_an_opened_call_ends_into_its_sink_once),
        cmocka_unit_test(test_an_opened_call_reply_over_the_limit_is_refused),
        cmocka_unit_test(test_an_opened_call_stops_when_its_client_goes_or_the_server_ends_it),
        cmocka_unit_test(test_a_stopped_call_is_counted_before_its_admission_ends),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
