/*
 * cmd_bench.c — `lmscore bench`: a closed-loop load generator. N Score calls
 * are kept in flight on one channel for a fixed time (each finished call is
 * immediately replaced); prints requests/s, items/s and the latency
 * percentiles of the calls that finished within the measured window (after
 * the warm-up), so throughput is completions per second of that window.
 * Each answer's ServerTiming splits the latency: the wait for an engine
 * worker (queue), the engine, and what is left outside the server's
 * accounts (network, gRPC, decoding and encoding).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli_args.h"
#include "commands.h"
#include "inputs.h"
#include "latency.h"
#include "methods.h"
#include "clock.h"
#include "pb_json.h"
#include "score_output.h"
#include "score_spec.h"

enum {
    OPT_CONCURRENCY,
    OPT_DURATION,
    OPT_WARMUP,
    OPT_QUERY_TOKENS,
    OPT_ITEMS,
    OPT_ITEM_TOKENS,
    OPT_LABELS,
    OPT_ALGORITHM,
    OPT_SEED,
    OPT_JSON,
};

static const cli_option BENCH_OPTIONS[] = {
    [OPT_CONCURRENCY] = {"concurrency", "N", "calls kept in flight (default 4)"},
    [OPT_DURATION] = {"duration", "SECONDS", "measured time (default 10)"},
    [OPT_WARMUP] = {"warmup", "SECONDS", "unmeasured time first (default 1)"},
    [OPT_QUERY_TOKENS] = {"query-tokens", "Q", "query length in tokens (default 32)"},
    [OPT_ITEMS] = {"items", "N", "items per request (default 16)"},
    [OPT_ITEM_TOKENS] = {"item-tokens", "L", "item length in tokens (default 8)"},
    [OPT_LABELS] = {"labels", "K", "label tokens per request (default 2)"},
    [OPT_ALGORITHM] = {"algorithm", "NAME", "as for score (default auto)"},
    [OPT_SEED] = {"seed", "N", "seed of the random token ids (default 1)"},
    [OPT_JSON] = {"json", NULL, "print the results as JSON"},
};

static const cli_command BENCH_COMMAND = {
    .name = "bench",
    .operands = "",
    .summary = "Closed-loop load: keeps --concurrency Score calls of random token ids in\n"
               "flight for --duration seconds; prints throughput and latency percentiles.",
};

typedef struct {
    long concurrency, query_tokens, items, item_tokens, labels, seed;
    double duration, warmup;
    Lmscore__V1__Algorithm algorithm;
    bool json;
} bench_options;

static bool handle_option(void *ctx, size_t index, const char *value)
{
    bench_options *o = ctx;
    switch (index) {
    case OPT_CONCURRENCY:
        return cli_parse_long("--concurrency", value, 1, 4096, &o->concurrency);
    case OPT_DURATION:
        return cli_parse_double("--duration", value, 0.01, 1e6, &o->duration);
    case OPT_WARMUP:
        return cli_parse_double("--warmup", value, 0, 1e6, &o->warmup);
    case OPT_QUERY_TOKENS:
        return cli_parse_long("--query-tokens", value, 0, 1 << 20, &o->query_tokens);
    case OPT_ITEMS:
        return cli_parse_long("--items", value, 0, 1 << 20, &o->items);
    case OPT_ITEM_TOKENS:
        return cli_parse_long("--item-tokens", value, 0, 1 << 20, &o->item_tokens);
    case OPT_LABELS:
        return cli_parse_long("--labels", value, 1, 1 << 16, &o->labels);
    case OPT_ALGORITHM:
        return algorithm_from_name(value, &o->algorithm);
    case OPT_SEED:
        return cli_parse_long("--seed", value, 0, INT32_MAX, &o->seed);
    case OPT_JSON:
        o->json = true;
        return true;
    }
    return false;
}

/* xorshift64*: reproducible token ids without libc's global rand state. */
static int32_t random_token(uint64_t *state, int32_t vocab)
{
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    return (int32_t)((*state * 0x2545F4914F6CDD1DULL >> 33) % (uint64_t)vocab);
}

static Lmscore__V1__Input *random_input(uint64_t *state, long n, int32_t vocab)
{
    int32_t *ids = malloc((size_t)(n ? n : 1) * sizeof *ids);
    if (!ids) return NULL;
    for (long i = 0; i < n; i++)
        ids[i] = random_token(state, vocab);
    Lmscore__V1__Input *input = input_from_ids(ids, (size_t)n);
    free(ids);
    return input;
}

/* The one request every call of the run sends; NULL when out of memory. */
static grpc_byte_buffer *build_request(const bench_options *o, int32_t vocab)
{
    uint64_t state = 0x9E3779B97F4A7C15ULL ^ (uint64_t)o->seed;
    Lmscore__V1__Input *query = random_input(&state, o->query_tokens, vocab);
    Lmscore__V1__Input *labels = random_input(&state, o->labels, vocab);
    input_list items = {0};
    bool ok = query && labels;
    for (long i = 0; ok && i < o->items; i++)
        ok = input_list_push(&items, random_input(&state, o->item_tokens, vocab));
    grpc_byte_buffer *bb = NULL;
    if (ok) {
        Lmscore__V1__ScoreRequest req = LMSCORE__V1__SCORE_REQUEST__INIT;
        req.query = query;
        req.items = items.items;
        req.n_items = items.count;
        req.label_token_ids = labels->token_ids->ids;
        req.n_label_token_ids = labels->token_ids->n_ids;
        req.algorithm = o->algorithm;
        bb = rpc_pack(&req.base);
    }
    input_list_free(&items);
    input_free(labels);
    input_free(query);
    return bb;
}

/* One of the --concurrency call slots. */
typedef struct {
    rpc_unary_call call;
    grpc_byte_buffer *sent; /* this call's copy of the request: the core empties it */
    double started;
} bench_slot;

typedef struct {
    const bench_options *o;
    rpc_conn conn;
    grpc_byte_buffer *request;
    double measure_from, measure_until;
    latency_record latencies;
    latency_record queued, engine, outside; /* the server's timing of each call */
    int64_t ok_calls, bad_responses;
    int64_t errors[GRPC_STATUS_UNAUTHENTICATED + 2]; /* by code; the last: unknown codes */
    rpc_status first_error;
    bool out_of_memory;
} bench_run;

static bool start_slot(bench_run *b, bench_slot *slot)
{
    slot->started = monotonic_seconds();
    slot->sent = grpc_byte_buffer_copy(b->request);
    rpc_status st;
    if (rpc_unary_start(&b->conn, &slot->call, METHOD_SCORE, slot->sent, slot, &st)) return true;
    grpc_byte_buffer_destroy(slot->sent);
    if (b->first_error.code == GRPC_STATUS_OK) b->first_error = st;
    b->errors[GRPC_STATUS_INTERNAL]++;
    return false;
}

/* Checks a successful response (it must score every item of the request)
 * and reads the server's timing of it: queue, engine, and the three parts
 * together (with preparing). */
static bool response_complete(const bench_run *b, grpc_byte_buffer *bb, double server[3])
{
    Lmscore__V1__ScoreResponse *resp =
        (Lmscore__V1__ScoreResponse *)rpc_unpack(&lmscore__v1__score_response__descriptor, bb);
    bool ok = resp && resp->n_items == (size_t)b->o->items;
    if (ok) {
        const Lmscore__V1__ServerTiming *t = resp->timing;
        server[0] = t ? output_duration_seconds(t->queue_time) : 0.0;
        server[1] = t ? output_duration_seconds(t->engine_time) : 0.0;
        server[2] = server[0] + server[1] + (t ? output_duration_seconds(t->prepare_time) : 0.0);
    }
    if (resp) protobuf_c_message_free_unpacked(&resp->base, NULL);
    return ok;
}

static void record(bench_run *b, bench_slot *slot, double now)
{
    grpc_byte_buffer *resp;
    rpc_status st;
    rpc_unary_finish(&slot->call, &resp, &st);
    grpc_byte_buffer_destroy(slot->sent);
    bool measured = now >= b->measure_from && now <= b->measure_until;
    if (resp) {
        double server[3];
        bool complete = response_complete(b, resp, server);
        grpc_byte_buffer_destroy(resp);
        if (!complete) {
            b->bad_responses++;
        } else if (measured) {
            b->ok_calls++;
            double latency = now - slot->started;
            if (!latency_add(&b->latencies, latency) || !latency_add(&b->queued, server[0]) ||
                !latency_add(&b->engine, server[1]) ||
                !latency_add(&b->outside, latency - server[2]))
                b->out_of_memory = true;
        }
        return;
    }
    if (b->first_error.code == GRPC_STATUS_OK) b->first_error = st;
    size_t code = (size_t)st.code <= GRPC_STATUS_UNAUTHENTICATED ? (size_t)st.code
                                                                 : GRPC_STATUS_UNAUTHENTICATED + 1;
    if (measured) b->errors[code]++;
}

/* Keeps every slot busy until measure_until, then drains. */
static void drive(bench_run *b, bench_slot *slots)
{
    long active = 0;
    for (long i = 0; i < b->o->concurrency; i++)
        active += start_slot(b, &slots[i]);
    while (active > 0) {
        grpc_event ev =
            grpc_completion_queue_next(b->conn.cq, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
        if (ev.type != GRPC_OP_COMPLETE) break;
        double now = monotonic_seconds();
        bench_slot *slot = ev.tag;
        record(b, slot, now);
        active--;
        if (now < b->measure_until) active += start_slot(b, slot);
    }
}

static int64_t error_count(const bench_run *b)
{
    int64_t n = b->bad_responses;
    for (size_t c = 0; c < sizeof b->errors / sizeof b->errors[0]; c++)
        n += b->errors[c];
    return n;
}

static json_object *errors_json(const bench_run *b)
{
    json_object *obj = json_object_new_object();
    for (size_t c = 0; c < sizeof b->errors / sizeof b->errors[0]; c++)
        if (b->errors[c])
            json_object_object_add(obj, rpc_code_name((grpc_status_code)c),
                                   json_object_new_int64(b->errors[c]));
    if (b->bad_responses)
        json_object_object_add(obj, "incomplete_response", json_object_new_int64(b->bad_responses));
    return obj;
}

/* {"p50": ms, "p99": ms} of one of the server's timings. */
static json_object *percentiles_json(latency_record *rec)
{
    json_object *obj = json_object_new_object();
    json_object_object_add(obj, "p50", pb_json_float(latency_percentile(rec, 50) * 1e3));
    json_object_object_add(obj, "p99", pb_json_float(latency_percentile(rec, 99) * 1e3));
    return obj;
}

static void report(bench_run *b)
{
    const bench_options *o = b->o;
    double secs = o->duration;
    double p50 = latency_percentile(&b->latencies, 50) * 1e3;
    double p95 = latency_percentile(&b->latencies, 95) * 1e3;
    double p99 = latency_percentile(&b->latencies, 99) * 1e3;
    double max = latency_percentile(&b->latencies, 100) * 1e3;
    double mean = latency_mean(&b->latencies) * 1e3;
    double rps = (double)b->ok_calls / secs;
    if (o->json) {
        json_object *obj = json_object_new_object();
        json_object_object_add(obj, "concurrency", json_object_new_int64(o->concurrency));
        json_object_object_add(obj, "duration_s", pb_json_float(secs));
        json_object_object_add(obj, "query_tokens", json_object_new_int64(o->query_tokens));
        json_object_object_add(obj, "items", json_object_new_int64(o->items));
        json_object_object_add(obj, "item_tokens", json_object_new_int64(o->item_tokens));
        json_object_object_add(obj, "labels", json_object_new_int64(o->labels));
        json_object_object_add(obj, "algorithm",
                               json_object_new_string(algorithm_name(o->algorithm)));
        json_object_object_add(obj, "requests", json_object_new_int64(b->ok_calls));
        json_object_object_add(obj, "requests_per_s", pb_json_float(rps));
        json_object_object_add(obj, "items_per_s", pb_json_float(rps * (double)o->items));
        json_object *lat = json_object_new_object();
        json_object_object_add(lat, "p50", pb_json_float(p50));
        json_object_object_add(lat, "p95", pb_json_float(p95));
        json_object_object_add(lat, "p99", pb_json_float(p99));
        json_object_object_add(lat, "max", pb_json_float(max));
        json_object_object_add(lat, "mean", pb_json_float(mean));
        json_object_object_add(obj, "latency_ms", lat);
        json_object *server = json_object_new_object();
        json_object_object_add(server, "queue", percentiles_json(&b->queued));
        json_object_object_add(server, "engine", percentiles_json(&b->engine));
        json_object_object_add(server, "outside", percentiles_json(&b->outside));
        json_object_object_add(obj, "server_ms", server);
        json_object_object_add(obj, "errors", errors_json(b));
        output_json_line(stdout, obj);
        return;
    }
    printf("bench: %ld concurrent Score calls for %.1f s after %.1f s warm-up; query %ld tokens, "
           "%ld items x %ld tokens, %ld labels, algorithm %s\n",
           o->concurrency, secs, o->warmup, o->query_tokens, o->items, o->item_tokens, o->labels,
           algorithm_name(o->algorithm));
    printf("requests: %lld (%.1f/s)  items: %lld (%.1f/s)  errors: %lld\n", (long long)b->ok_calls,
           rps, (long long)(b->ok_calls * o->items), rps * (double)o->items,
           (long long)error_count(b));
    printf("latency ms: p50 %.2f  p95 %.2f  p99 %.2f  max %.2f  mean %.2f\n", p50, p95, p99, max,
           mean);
    printf("server ms (p50/p99): queued %.2f/%.2f  engine %.2f/%.2f  outside the server "
           "%.2f/%.2f\n",
           latency_percentile(&b->queued, 50) * 1e3, latency_percentile(&b->queued, 99) * 1e3,
           latency_percentile(&b->engine, 50) * 1e3, latency_percentile(&b->engine, 99) * 1e3,
           latency_percentile(&b->outside, 50) * 1e3, latency_percentile(&b->outside, 99) * 1e3);
}

/* The vocabulary size, for drawing valid token ids; 0 when the call failed. */
static int32_t vocab_size(rpc_conn *conn)
{
    Lmscore__V1__GetModelInfoRequest req = LMSCORE__V1__GET_MODEL_INFO_REQUEST__INIT;
    ProtobufCMessage *resp;
    rpc_status st;
    if (!rpc_unary(conn, METHOD_GET_MODEL_INFO, &req.base,
                   &lmscore__v1__get_model_info_response__descriptor, &resp, &st)) {
        rpc_status_print("bench: GetModelInfo", &st);
        return 0;
    }
    int32_t vocab = ((Lmscore__V1__GetModelInfoResponse *)resp)->vocab_size;
    protobuf_c_message_free_unpacked(resp, NULL);
    return vocab;
}

static int run(const bench_options *o, const rpc_options *opts)
{
    bench_run b = {.o = o};
    rpc_status st;
    if (!rpc_connect(&b.conn, opts, &st)) {
        rpc_status_print("bench", &st);
        return CLI_EXIT_FAILED;
    }
    int status = CLI_EXIT_FAILED;
    int32_t vocab = vocab_size(&b.conn);
    bench_slot *slots = calloc((size_t)o->concurrency, sizeof *slots);
    if (vocab > 0 && slots && (b.request = build_request(o, vocab))) {
        b.measure_from = monotonic_seconds() + o->warmup;
        b.measure_until = b.measure_from + o->duration;
        drive(&b, slots);
        if (b.out_of_memory) {
            fprintf(stderr, "lmscore: bench: out of memory for the latencies\n");
        } else {
            report(&b);
            if (b.first_error.code != GRPC_STATUS_OK) rpc_status_print("bench", &b.first_error);
            status = b.ok_calls > 0 ? CLI_EXIT_OK : CLI_EXIT_FAILED;
        }
        grpc_byte_buffer_destroy(b.request);
    } else if (vocab > 0) {
        fprintf(stderr, "lmscore: bench: out of memory\n");
    }
    free(slots);
    latency_free(&b.latencies);
    latency_free(&b.queued);
    latency_free(&b.engine);
    latency_free(&b.outside);
    rpc_close(&b.conn);
    return status;
}

int cmd_bench(int argc, char **argv)
{
    bench_options o = {.concurrency = 4,
                       .duration = 10,
                       .warmup = 1,
                       .query_tokens = 32,
                       .items = 16,
                       .item_tokens = 8,
                       .labels = 2,
                       .seed = 1};
    rpc_options opts = cli_default_connection(60);
    cli_group group = {"load", BENCH_OPTIONS, sizeof BENCH_OPTIONS / sizeof BENCH_OPTIONS[0],
                       handle_option, &o};
    int first, status;
    if (!cli_parse(&BENCH_COMMAND, &group, 1, argc, argv, &opts, &first, &status)) return status;
    return run(&o, &opts);
}
