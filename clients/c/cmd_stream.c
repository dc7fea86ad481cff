/*
 * cmd_stream.c — `lmscore stream`: items from a file or stdin, one per line,
 * sent in batches through the bidirectional ScoreItems call while the scores
 * stream back; results are written as they arrive, with a progress bar on
 * stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli_args.h"
#include "commands.h"
#include "item_reader.h"
#include "methods.h"
#include "pb_json.h"
#include "progress.h"
#include "score_output.h"
#include "score_spec.h"

enum { OPT_IDS, OPT_BATCH, OPT_PROGRESS, OPT_NO_PROGRESS };

static const cli_option STREAM_OPTIONS[] = {
    [OPT_IDS] = {"ids", NULL, "each input line is token ids (e.g. 4,5,6), not text"},
    [OPT_BATCH] = {"batch", "N", "items per request message (default: 512 or the server's limit)"},
    [OPT_PROGRESS] = {"progress", NULL, "draw the progress bar even when stderr is no terminal"},
    [OPT_NO_PROGRESS] = {"no-progress", NULL, "never draw the progress bar"},
};

static const cli_command STREAM_COMMAND = {
    .name = "stream",
    .operands = "[FILE]",
    .summary = "Scores the items of FILE (default: stdin), one per line, through one\n"
               "ScoreItems call; prints \"index<TAB>scores...\" rows (or JSON lines) as they\n"
               "arrive, in the order the server finishes them.",
    .min_operands = 0,
    .max_operands = 1,
};

typedef struct {
    bool ids;
    long batch;   /* 0: ask the server for its limit */
    int progress; /* 1 on, 0 off, -1 when stderr is a terminal */
} stream_options;

static bool handle_option(void *ctx, size_t index, const char *value)
{
    stream_options *o = ctx;
    switch (index) {
    case OPT_IDS:
        o->ids = true;
        return true;
    case OPT_BATCH:
        return cli_parse_long("--batch", value, 1, 1 << 20, &o->batch);
    case OPT_PROGRESS:
        o->progress = 1;
        return true;
    case OPT_NO_PROGRESS:
        o->progress = 0;
        return true;
    }
    return false;
}

/* The tags of the call's operations on the completion queue. */
static char TAG_SEND, TAG_RECV, TAG_STATUS;

typedef struct {
    const score_spec *spec;
    rpc_conn conn;
    rpc_stream_call call;
    item_reader reader;
    input_list batch;
    grpc_byte_buffer *sending; /* the message of the send in flight */
    bool send_busy, recv_busy, status_done;
    bool closed;      /* SEND_CLOSE_FROM_CLIENT issued */
    bool input_error; /* a bad line: the call was cancelled */
    bool bad_message; /* the server sent something we cannot parse */
    int64_t sent, received, summary_count;
    progress bar;
} stream_state;

static bool send_message(stream_state *s, const ProtobufCMessage *msg)
{
    s->sending = rpc_pack(msg);
    if (s->sending && rpc_stream_send(&s->call, s->sending, &TAG_SEND)) {
        s->send_busy = true;
        return true;
    }
    if (s->sending) grpc_byte_buffer_destroy(s->sending);
    s->sending = NULL;
    return false;
}

/* Sends the next batch, or half-closes at the end of the input. */
static void send_next(stream_state *s, size_t batch_size)
{
    if (s->closed || s->input_error) return;
    if (!s->reader.eof && !item_reader_next_batch(&s->reader, &s->batch, batch_size)) {
        s->input_error = true;
        rpc_stream_cancel(&s->call);
        return;
    }
    if (s->batch.count > 0) {
        Lmscore__V1__ItemBatch items = LMSCORE__V1__ITEM_BATCH__INIT;
        items.items = s->batch.items;
        items.n_items = s->batch.count;
        Lmscore__V1__ScoreItemsRequest req = LMSCORE__V1__SCORE_ITEMS_REQUEST__INIT;
        req.kind_case = LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_ITEMS;
        req.items = &items;
        if (send_message(s, &req.base)) s->sent += (int64_t)s->batch.count;
        input_list_clear(&s->batch);
        return;
    }
    s->closed = true;
    s->send_busy = rpc_stream_close_send(&s->call, &TAG_SEND);
}

static void print_chunk(stream_state *s, const Lmscore__V1__ScoreChunk *chunk)
{
    size_t n = chunk->n_items < chunk->n_item_indices ? chunk->n_items : chunk->n_item_indices;
    for (size_t i = 0; i < n; i++) {
        if (s->spec->json)
            output_json_line(stdout, output_item_json(chunk->item_indices[i], chunk->items[i]));
        else
            output_item_tsv(stdout, chunk->item_indices[i], chunk->items[i]);
    }
    fflush(stdout);
    s->received += (int64_t)n;
}

static void print_summary(stream_state *s, const Lmscore__V1__ScoreSummary *summary)
{
    s->summary_count = summary->item_count;
    if (s->spec->json) {
        json_object *obj = json_object_new_object();
        json_object_object_add(obj, "summary", pb_to_json(&summary->base));
        output_json_line(stdout, obj);
    } else {
        output_call_summary(summary->algorithm, summary->algorithm_reason, summary->usage,
                            summary->timing);
    }
}

static void on_message(stream_state *s)
{
    grpc_byte_buffer *bb = s->call.received;
    s->recv_busy = false;
    if (!bb) return; /* end of the response stream */
    Lmscore__V1__ScoreStreamResponse *resp = (Lmscore__V1__ScoreStreamResponse *)rpc_unpack(
        &lmscore__v1__score_stream_response__descriptor, bb);
    grpc_byte_buffer_destroy(bb);
    if (!resp) {
        s->bad_message = true;
        rpc_stream_cancel(&s->call);
        return;
    }
    if (resp->kind_case == LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_CHUNK)
        print_chunk(s, resp->chunk);
    else if (resp->kind_case == LMSCORE__V1__SCORE_STREAM_RESPONSE__KIND_SUMMARY)
        print_summary(s, resp->summary);
    protobuf_c_message_free_unpacked(&resp->base, NULL);
    progress_update(&s->bar, s->received, s->sent);
    s->recv_busy = rpc_stream_recv(&s->call, &TAG_RECV);
}

/* Drives the call until its status is in and nothing is outstanding. */
static void run_call(stream_state *s, size_t batch_size)
{
    Lmscore__V1__ScoreItemsHeader header = LMSCORE__V1__SCORE_ITEMS_HEADER__INIT;
    score_spec_to_header(s->spec, &header);
    Lmscore__V1__ScoreItemsRequest req = LMSCORE__V1__SCORE_ITEMS_REQUEST__INIT;
    req.kind_case = LMSCORE__V1__SCORE_ITEMS_REQUEST__KIND_HEADER;
    req.header = &header;
    if (!send_message(s, &req.base)) rpc_stream_cancel(&s->call);
    s->recv_busy = rpc_stream_recv(&s->call, &TAG_RECV);
    while (s->send_busy || s->recv_busy || !s->status_done) {
        grpc_event ev =
            grpc_completion_queue_next(s->conn.cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE) break;
        if (ev.tag == &TAG_STATUS) {
            s->status_done = true;
        } else if (ev.tag == &TAG_RECV) {
            on_message(s);
        } else if (ev.tag == &TAG_SEND) {
            s->send_busy = false;
            if (s->sending) grpc_byte_buffer_destroy(s->sending);
            s->sending = NULL;
            /* A failed send means the call is over: its status tells why. */
            if (ev.success) send_next(s, batch_size);
        }
    }
}

/* Exit status from the call's outcome and the local checks. */
static int finish(stream_state *s)
{
    rpc_status st;
    rpc_stream_finish(&s->call, &st);
    progress_finish(&s->bar, s->received, s->sent);
    if (s->input_error) return CLI_EXIT_FAILED; /* already explained */
    if (s->bad_message) {
        fprintf(stderr, "lmscore: stream: the server sent a message that is not a "
                        "ScoreStreamResponse\n");
        return CLI_EXIT_FAILED;
    }
    if (st.code != GRPC_STATUS_OK) {
        rpc_status_print("stream", &st);
        return CLI_EXIT_FAILED;
    }
    if (s->received != s->sent || s->summary_count != s->sent) {
        fprintf(stderr,
                "lmscore: stream: sent %lld items but got %lld scores (summary: %lld items)\n",
                (long long)s->sent, (long long)s->received, (long long)s->summary_count);
        return CLI_EXIT_FAILED;
    }
    return CLI_EXIT_OK;
}

/* The default batch: 512 items, or fewer when the server takes fewer per message. */
static size_t default_batch(rpc_conn *conn)
{
    const size_t preferred = 512;
    Lmscore__V1__GetModelInfoRequest req = LMSCORE__V1__GET_MODEL_INFO_REQUEST__INIT;
    ProtobufCMessage *resp;
    rpc_status st;
    if (!rpc_unary(conn, METHOD_GET_MODEL_INFO, &req.base,
                   &lmscore__v1__get_model_info_response__descriptor, &resp, &st))
        return preferred; /* the stream itself will report what is wrong */
    const Lmscore__V1__Limits *limits = ((Lmscore__V1__GetModelInfoResponse *)resp)->limits;
    size_t batch = limits && limits->max_items > 0 && (size_t)limits->max_items < preferred
                       ? (size_t)limits->max_items
                       : preferred;
    protobuf_c_message_free_unpacked(resp, NULL);
    return batch;
}

static int run(const score_spec *spec, const stream_options *o, const char *path,
               const rpc_options *opts)
{
    stream_state s = {.spec = spec};
    if (!item_reader_open(&s.reader, path, o->ids)) return CLI_EXIT_FAILED;
    bool show = o->progress == 1 || (o->progress == -1 && isatty(STDERR_FILENO));
    progress_init(&s.bar, show, show ? item_reader_count(&s.reader) : -1);
    rpc_status st;
    int status = CLI_EXIT_FAILED;
    if (!rpc_connect(&s.conn, opts, &st)) {
        rpc_status_print("stream", &st);
    } else {
        /* Before the stream starts: rpc_unary would take the stream's events. */
        size_t batch = o->batch ? (size_t)o->batch : default_batch(&s.conn);
        if (rpc_stream_start(&s.conn, &s.call, METHOD_SCORE_ITEMS, &TAG_STATUS, &st)) {
            run_call(&s, batch);
            status = finish(&s);
        } else {
            rpc_status_print("stream", &st);
        }
        rpc_close(&s.conn);
    }
    input_list_free(&s.batch);
    item_reader_close(&s.reader);
    return status;
}

int cmd_stream(int argc, char **argv)
{
    score_spec spec = {0};
    stream_options o = {.progress = -1};
    rpc_options opts = cli_default_connection(0);
    cli_group groups[] = {
        score_spec_options(&spec),
        {"input", STREAM_OPTIONS, sizeof STREAM_OPTIONS / sizeof STREAM_OPTIONS[0], handle_option,
         &o},
    };
    int first, status;
    if (cli_parse(&STREAM_COMMAND, groups, 2, argc, argv, &opts, &first, &status)) {
        status = score_spec_complete(&spec, "stream")
                     ? run(&spec, &o, first < argc ? argv[first] : "-", &opts)
                     : CLI_EXIT_USAGE;
    }
    score_spec_free(&spec);
    return status;
}
