/*
 * bench_service.c — what the gRPC service adds to a unary Score, and what
 * its HTTP API adds. One request (a query and 10 items by default) is timed
 * four ways, in turn, one call at a time:
 *   in-process   lms_engine_score in this process;
 *   gRPC         a unary Score to a running lmscored (gRPC core C client);
 *   HTTP         the same request as POST /v1/score JSON to the same
 *                lmscored (--http-port: its --http-listen port), on one
 *                keep-alive connection (http_client.h);
 *   raw TCP      the same work behind a bare loopback socket (raw_floor.h):
 *                the floor any service on this machine stands on.
 * Each path's engine runs right after another process's engine, so that no
 * path finds the caches warmer than another. The overhead is reported two
 * ways: p50 minus the in-process p50, and per call as the latency minus the
 * engine time the server itself measured (ServerTiming.engine_time for
 * gRPC, timing.engine_time for HTTP), which takes out the engine's run-to-run and core-to-core
 * spread. Two Health.Check round trips time the gRPC transport alone: one after an idle stretch as
 * long as an engine call (both processes asleep, as a Score call finds them) and one right after
 * another call. A Score of no items after the same idle stretch takes the daemon's own path
 * (decoding, the hand-off to a worker, the engine's checks, encoding) with no engine work.
 *
 *   bench_service --model PATH --target HOST:PORT [--http-port N] [--iterations N]
 *                 [--warmup N] [--items N] [--item-tokens N] [--query-tokens N]
 *
 * Prints Markdown tables; run.sh starts the daemon and calls this.
 */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "http_client.h"
#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"
#include "raw_floor.h"

typedef struct {
    const char *model, *target;
    int http_port; /* 0: no HTTP path */
    int iterations, warmup, items, item_tokens, query_tokens;
} bench_args;

static double now_ms(void)
{
    return monotonic_seconds() * 1e3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double percentile(double *v, int n, double p)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    int k = (int)(p * (n - 1) + 0.5);
    return v[k];
}

/* The benchmark request: deterministic ids, the same for both paths. */
typedef struct {
    int32_t *query, *item_ids, labels[2];
    lms_tokens *items;
    Lmscore__V1__TokenIds query_ids, *item_tok;
    Lmscore__V1__Input query_in, *item_in, **item_ptrs;
    Lmscore__V1__ScoreRequest proto;
    lms_score_request engine;
    char *json; /* the same request as a /v1/score body */
    size_t json_len;
} bench_request;

/* Appends "[a, b, ...]" of ids to out at *len (out has room). */
static void json_ids(char *out, size_t *len, const int32_t *ids, int n)
{
    *len += (size_t)sprintf(out + *len, "[");
    for (int i = 0; i < n; i++)
        *len += (size_t)sprintf(out + *len, "%s%d", i ? ", " : "", ids[i]);
    *len += (size_t)sprintf(out + *len, "]");
}

static int request_json(bench_request *r, const bench_args *a)
{
    /* at most 12 characters per id, and some punctuation */
    size_t cap = 128 + 14 * ((size_t)a->query_tokens + (size_t)a->items * (a->item_tokens + 2));
    if (!(r->json = malloc(cap))) return -1;
    size_t n = (size_t)sprintf(r->json, "{\"query\": ");
    json_ids(r->json, &n, r->query, a->query_tokens);
    n += (size_t)sprintf(r->json + n, ", \"items\": [");
    for (int i = 0; i < a->items; i++) {
        n += (size_t)sprintf(r->json + n, "%s", i ? ", " : "");
        json_ids(r->json, &n, r->items[i].ids, a->item_tokens);
    }
    n += (size_t)sprintf(r->json + n, "], \"label_token_ids\": ");
    json_ids(r->json, &n, r->labels, 2);
    n += (size_t)sprintf(r->json + n, "}");
    r->json_len = n;
    return 0;
}

static int request_init(bench_request *r, const bench_args *a)
{
    memset(r, 0, sizeof *r);
    r->query = calloc((size_t)a->query_tokens, sizeof *r->query);
    r->item_ids = calloc((size_t)a->items * (size_t)a->item_tokens, sizeof *r->item_ids);
    r->items = calloc((size_t)a->items, sizeof *r->items);
    r->item_tok = calloc((size_t)a->items, sizeof *r->item_tok);
    r->item_in = calloc((size_t)a->items, sizeof *r->item_in);
    r->item_ptrs = calloc((size_t)a->items, sizeof *r->item_ptrs);
    if (!r->query || !r->item_ids || !r->items || !r->item_tok || !r->item_in || !r->item_ptrs)
        return -1;
    for (int i = 0; i < a->query_tokens; i++)
        r->query[i] = 1000 + 37 * i;
    r->labels[0] = 9454;
    r->labels[1] = 2753;
    lmscore__v1__token_ids__init(&r->query_ids);
    r->query_ids.n_ids = (size_t)a->query_tokens;
    r->query_ids.ids = r->query;
    lmscore__v1__input__init(&r->query_in);
    r->query_in.kind_case = LMSCORE__V1__INPUT__KIND_TOKEN_IDS;
    r->query_in.token_ids = &r->query_ids;
    for (int i = 0; i < a->items; i++) {
        int32_t *ids = r->item_ids + (size_t)i * (size_t)a->item_tokens;
        for (int k = 0; k < a->item_tokens; k++)
            ids[k] = 2000 + 101 * i + k;
        r->items[i] = (lms_tokens){.ids = ids, .len = a->item_tokens};
        lmscore__v1__token_ids__init(&r->item_tok[i]);
        r->item_tok[i].n_ids = (size_t)a->item_tokens;
        r->item_tok[i].ids = ids;
        lmscore__v1__input__init(&r->item_in[i]);
        r->item_in[i].kind_case = LMSCORE__V1__INPUT__KIND_TOKEN_IDS;
        r->item_in[i].token_ids = &r->item_tok[i];
        r->item_ptrs[i] = &r->item_in[i];
    }
    lmscore__v1__score_request__init(&r->proto);
    r->proto.query = &r->query_in;
    r->proto.n_items = (size_t)a->items;
    r->proto.items = r->item_ptrs;
    r->proto.n_label_token_ids = 2;
    r->proto.label_token_ids = r->labels;
    r->engine = (lms_score_request){.query = {.ids = r->query, .len = a->query_tokens},
                                    .items = r->items,
                                    .n_items = a->items,
                                    .label_ids = r->labels,
                                    .n_labels = 2};
    return request_json(r, a);
}

static void request_free(bench_request *r)
{
    free(r->query);
    free(r->item_ids);
    free(r->items);
    free(r->item_tok);
    free(r->item_in);
    free(r->item_ptrs);
    free(r->json);
}

/* One unary call; returns the gRPC status (GRPC_STATUS_OK on success) and,
 * when resp is given, the response message (the caller frees it). */
static grpc_status_code call_unary(grpc_channel *ch, grpc_completion_queue *cq, const char *path,
                                   grpc_slice payload, grpc_byte_buffer **resp)
{
    grpc_slice method = grpc_slice_from_static_string(path);
    grpc_call *call = grpc_channel_create_call(ch, NULL, GRPC_PROPAGATE_DEFAULTS, cq, method, NULL,
                                               gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    grpc_byte_buffer *send = grpc_raw_byte_buffer_create(&payload, 1);
    grpc_byte_buffer *recv = NULL;
    grpc_metadata_array initial, trailing;
    grpc_metadata_array_init(&initial);
    grpc_metadata_array_init(&trailing);
    grpc_status_code status = GRPC_STATUS_UNKNOWN;
    grpc_slice details = grpc_empty_slice();
    grpc_op ops[6];
    memset(ops, 0, sizeof ops);
    ops[0].op = GRPC_OP_SEND_INITIAL_METADATA;
    ops[1].op = GRPC_OP_SEND_MESSAGE;
    ops[1].data.send_message.send_message = send;
    ops[2].op = GRPC_OP_SEND_CLOSE_FROM_CLIENT;
    ops[3].op = GRPC_OP_RECV_INITIAL_METADATA;
    ops[3].data.recv_initial_metadata.recv_initial_metadata = &initial;
    ops[4].op = GRPC_OP_RECV_MESSAGE;
    ops[4].data.recv_message.recv_message = &recv;
    ops[5].op = GRPC_OP_RECV_STATUS_ON_CLIENT;
    ops[5].data.recv_status_on_client.trailing_metadata = &trailing;
    ops[5].data.recv_status_on_client.status = &status;
    ops[5].data.recv_status_on_client.status_details = &details;
    if (grpc_call_start_batch(call, ops, 6, call, NULL) == GRPC_CALL_OK)
        grpc_completion_queue_pluck(cq, call, gpr_inf_future(GPR_CLOCK_REALTIME), NULL);
    if (!recv && status == GRPC_STATUS_OK) status = GRPC_STATUS_INTERNAL; /* no answer */
    if (resp)
        *resp = recv;
    else if (recv)
        grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(call);
    return status;
}

/* The engine time the daemon reported in a ScoreResponse, in ms; -1 when
 * the response cannot be read or carries none. */
static double reported_engine_ms(grpc_byte_buffer *bb)
{
    grpc_byte_buffer_reader reader;
    if (!grpc_byte_buffer_reader_init(&reader, bb)) return -1;
    grpc_slice s = grpc_byte_buffer_reader_readall(&reader);
    grpc_byte_buffer_reader_destroy(&reader);
    Lmscore__V1__ScoreResponse *resp =
        lmscore__v1__score_response__unpack(NULL, GRPC_SLICE_LENGTH(s), GRPC_SLICE_START_PTR(s));
    grpc_slice_unref(s);
    double ms = -1;
    if (resp && resp->timing && resp->timing->engine_time)
        ms = (double)resp->timing->engine_time->seconds * 1e3 +
             (double)resp->timing->engine_time->nanos / 1e6;
    if (resp) lmscore__v1__score_response__free_unpacked(resp, NULL);
    return ms;
}

/* The engine time in an HTTP answer ("engine_time": "0.001234567s"), in
 * ms; -1 when it has none. */
static double http_engine_ms(const char *body)
{
    const char *at = strstr(body, "\"engine_time\":\"");
    return at ? strtod(at + strlen("\"engine_time\":\""), NULL) * 1e3 : -1;
}

typedef struct {
    grpc_channel *ch;
    grpc_completion_queue *cq;
} grpc_client;

static void client_open(grpc_client *g, const bench_args *a)
{
    grpc_channel_credentials *creds = grpc_insecure_credentials_create();
    g->ch = grpc_channel_create(a->target, creds, NULL);
    grpc_channel_credentials_release(creds);
    g->cq = grpc_completion_queue_create_for_pluck(NULL);
}

static void client_close(grpc_client *g)
{
    grpc_completion_queue_shutdown(g->cq);
    while (
        grpc_completion_queue_pluck(g->cq, NULL, gpr_inf_future(GPR_CLOCK_REALTIME), NULL).type !=
        GRPC_QUEUE_SHUTDOWN) {
    }
    grpc_completion_queue_destroy(g->cq);
    grpc_channel_destroy(g->ch);
}

/* What is timed, one entry per timed iteration (ms). */
enum {
    LOCAL,       /* lms_engine_score in this process */
    GRPC,        /* the unary Score call */
    GRPC_ENGINE, /* the daemon's engine time for that call */
    RAW,         /* the raw TCP call */
    RAW_ENGINE,  /* the raw server's engine time for it */
    CHECK_IDLE,  /* Health.Check after an idle stretch as long as LOCAL */
    CHECK_WARM,  /* Health.Check right after the Score call */
    EMPTY_SCORE, /* a Score of no items after an idle stretch as long as LOCAL */
    HTTP,        /* POST /v1/score of the same request */
    HTTP_ENGINE, /* the daemon's engine time for it */
    N_SERIES
};

static lms_status score_local(lms_engine *e, const bench_request *r, lms_error *err)
{
    lms_score_result res;
    memset(&res, 0, sizeof res);
    lms_status st = lms_engine_score(e, &r->engine, NULL, &res, err);
    lms_score_result_free(&res);
    return st;
}

static void sleep_ms(double ms)
{
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    nanosleep(&ts, NULL);
}

/* Runs the iterations: in-process, gRPC Score, Health.Check (warm), raw
 * TCP, HTTP Score, an idle stretch, Health.Check (idle), an idle stretch,
 * Score of no items. Each engine runs right after another process's. */
static int time_all(const bench_args *a, const bench_request *r, raw_floor *raw,
                    double *series[N_SERIES])
{
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    lms_engine *e;
    lms_error err = {0};
    if (lms_engine_open(a->model, &opt, &e, &err) != LMS_OK) {
        fprintf(stderr, "bench_service: %s\n", err.msg);
        return -1;
    }
    size_t len = lmscore__v1__score_request__get_packed_size(&r->proto);
    grpc_slice payload = grpc_slice_malloc(len);
    lmscore__v1__score_request__pack(&r->proto, GRPC_SLICE_START_PTR(payload));
    Lmscore__V1__ScoreRequest no_items = r->proto;
    no_items.n_items = 0;
    grpc_slice empty = grpc_slice_malloc(lmscore__v1__score_request__get_packed_size(&no_items));
    lmscore__v1__score_request__pack(&no_items, GRPC_SLICE_START_PTR(empty));
    grpc_client g;
    client_open(&g, a);
    http_client *http = a->http_port ? http_client_open(a->http_port) : NULL;
    const char *score = "/lmscore.v1.ScoreService/Score", *check = "/grpc.health.v1.Health/Check";
    int rc = a->http_port && !http ? -1 : 0;
    for (int i = 0; i < a->warmup + a->iterations && rc == 0; i++) {
        double t[N_SERIES];
        grpc_byte_buffer *resp = NULL;
        double t0 = now_ms();
        lms_status st = score_local(e, r, &err);
        double t1 = now_ms();
        grpc_status_code gst = call_unary(g.ch, g.cq, score, payload, &resp);
        double t2 = now_ms();
        grpc_status_code warm = call_unary(g.ch, g.cq, check, grpc_empty_slice(), NULL);
        double t3 = now_ms();
        int raw_rc = raw_floor_call(raw, GRPC_SLICE_START_PTR(payload), len, &t[RAW_ENGINE]);
        double t4 = now_ms();
        int hst = http ? http_client_post(http, "/v1/score", r->json, r->json_len) : 200;
        double t_http = now_ms();
        t[HTTP_ENGINE] = http && hst == 200 ? http_engine_ms(http_client_body(http)) : 0;
        sleep_ms(t1 - t0);
        double t5 = now_ms();
        grpc_status_code idle = call_unary(g.ch, g.cq, check, grpc_empty_slice(), NULL);
        double t6 = now_ms();
        sleep_ms(t1 - t0);
        double t7 = now_ms();
        grpc_status_code nothing = call_unary(g.ch, g.cq, score, empty, NULL);
        double t8 = now_ms();
        t[GRPC_ENGINE] = resp ? reported_engine_ms(resp) : -1;
        if (resp) grpc_byte_buffer_destroy(resp);
        if (st != LMS_OK) {
            fprintf(stderr, "bench_service: %s\n", err.msg);
            rc = -1;
        } else if (gst != GRPC_STATUS_OK || warm != GRPC_STATUS_OK || idle != GRPC_STATUS_OK ||
                   nothing != GRPC_STATUS_OK) {
            fprintf(stderr,
                    "bench_service: Score/Check/Check/Score(no items) failed with status "
                    "%d/%d/%d/%d\n",
                    (int)gst, (int)warm, (int)idle, (int)nothing);
            rc = -1;
        } else if (hst != 200) {
            fprintf(stderr, "bench_service: POST /v1/score answered %d: %s\n", hst,
                    hst > 0 ? http_client_body(http) : "");
            rc = -1;
        } else if (t[GRPC_ENGINE] < 0 || t[HTTP_ENGINE] < 0) {
            fprintf(stderr, "bench_service: a Score response carries no engine time\n");
            rc = -1;
        } else if (raw_rc != 0) {
            rc = -1;
        } else if (i >= a->warmup) {
            t[LOCAL] = t1 - t0;
            t[GRPC] = t2 - t1;
            t[HTTP] = t_http - t4;
            t[CHECK_WARM] = t3 - t2;
            t[RAW] = t4 - t3;
            t[CHECK_IDLE] = t6 - t5;
            t[EMPTY_SCORE] = t8 - t7;
            for (int k = 0; k < N_SERIES; k++)
                series[k][i - a->warmup] = t[k];
        }
    }
    client_close(&g);
    http_client_close(http);
    grpc_slice_unref(payload);
    grpc_slice_unref(empty);
    lms_engine_close(e);
    return rc;
}
static int parse_args(int argc, char **argv, bench_args *a)
{
    *a = (bench_args){
        .iterations = 500, .warmup = 50, .items = 10, .item_tokens = 8, .query_tokens = 32};
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *k = argv[i], *v = argv[i + 1];
        if (strcmp(k, "--model") == 0)
            a->model = v;
        else if (strcmp(k, "--target") == 0)
            a->target = v;
        else if (strcmp(k, "--http-port") == 0)
            a->http_port = atoi(v);
        else if (strcmp(k, "--iterations") == 0)
            a->iterations = atoi(v);
        else if (strcmp(k, "--warmup") == 0)
            a->warmup = atoi(v);
        else if (strcmp(k, "--items") == 0)
            a->items = atoi(v);
        else if (strcmp(k, "--item-tokens") == 0)
            a->item_tokens = atoi(v);
        else if (strcmp(k, "--query-tokens") == 0)
            a->query_tokens = atoi(v);
        else
            return -1;
    }
    if (argc % 2 == 0 || !a->model || !a->target || a->iterations < 1 || a->warmup < 0 ||
        a->items < 1 || a->item_tokens < 1 || a->query_tokens < 1)
        return -1;
    return 0;
}

/* p50 and p99 of v[0..n) (sorted in place). */
static void percentiles(double *v, int n, double *p50, double *p99)
{
    *p50 = percentile(v, n, 0.50);
    *p99 = percentile(v, n, 0.99);
}

static void row(const char *what, double *v, int n)
{
    double p50, p99;
    percentiles(v, n, &p50, &p99);
    printf("| %s | %.3f | %.3f |\n", what, p50, p99);
}

/* diff[i] = a[i] - b[i], as a row; returns its p50. */
static double diff_row(const char *what, const double *a, const double *b, double *diff, int n)
{
    for (int i = 0; i < n; i++)
        diff[i] = a[i] - b[i];
    row(what, diff, n);
    return percentile(diff, n, 0.50);
}

static void report(const bench_args *a, double *s[N_SERIES], double *diff)
{
    int n = a->iterations;
    printf("Unary Score, %d items of %d tokens, query %d tokens, %d calls after %d warm-up\n\n",
           a->items, a->item_tokens, a->query_tokens, n, a->warmup);
    /* the per-call rows first: percentiles sort the series */
    printf("| per call | p50 ms | p99 ms |\n| --- | ---: | ---: |\n");
    double grpc_overhead = diff_row("gRPC: latency - the daemon's engine time (service overhead)",
                                    s[GRPC], s[GRPC_ENGINE], diff, n);
    double http_overhead = 0;
    if (a->http_port)
        http_overhead = diff_row("HTTP: latency - the daemon's engine time (service overhead)",
                                 s[HTTP], s[HTTP_ENGINE], diff, n);
    diff_row("raw TCP: latency - the server's engine time (floor)", s[RAW], s[RAW_ENGINE], diff, n);
    diff_row("gRPC latency - in-process time of the same iteration", s[GRPC], s[LOCAL], diff, n);
    double local50, local99, grpc50, grpc99, raw50, raw99;
    percentiles(s[LOCAL], n, &local50, &local99);
    percentiles(s[GRPC], n, &grpc50, &grpc99);
    percentiles(s[RAW], n, &raw50, &raw99);
    printf("\n| path | p50 ms | p99 ms |\n| --- | ---: | ---: |\n");
    printf("| in-process lms_engine_score | %.3f | %.3f |\n", local50, local99);
    printf("| gRPC unary Score (loopback) | %.3f | %.3f |\n", grpc50, grpc99);
    if (a->http_port) {
        double http50, http99;
        percentiles(s[HTTP], n, &http50, &http99);
        printf("| HTTP POST /v1/score (loopback, keep-alive) | %.3f | %.3f |\n", http50, http99);
    }
    printf("| raw TCP, same work (loopback) | %.3f | %.3f |\n", raw50, raw99);
    printf("| service overhead: gRPC p50 - in-process p50 | %.3f | %.3f |\n", grpc50 - local50,
           grpc99 - local99);
    printf("| floor: raw TCP p50 - in-process p50 | %.3f | %.3f |\n", raw50 - local50,
           raw99 - local99);
    row("engine time in lmscored (ServerTiming.engine_time)", s[GRPC_ENGINE], n);
    row("engine time in the raw server", s[RAW_ENGINE], n);
    row("gRPC Health.Check after an idle stretch (transport alone)", s[CHECK_IDLE], n);
    row("gRPC Health.Check right after another call (warm transport)", s[CHECK_WARM], n);
    row("gRPC Score of no items after an idle stretch (the daemon's path, no engine work)",
        s[EMPTY_SCORE], n);
    if (a->http_port)
        printf("\nHTTP overhead per call / gRPC overhead per call (p50s): %.3f / %.3f = %.2f\n",
               http_overhead, grpc_overhead, http_overhead / grpc_overhead);
}

int main(int argc, char **argv)
{
    bench_args a;
    if (parse_args(argc, argv, &a) != 0) {
        fprintf(stderr, "usage: bench_service --model PATH --target HOST:PORT [--http-port N] "
                        "[--iterations N] [--warmup N] [--items N] [--item-tokens N] "
                        "[--query-tokens N]\n");
        return 1;
    }
    bench_request r;
    double *series[N_SERIES], *diff = calloc((size_t)a.iterations, sizeof *diff);
    bool ok = diff != NULL;
    for (int k = 0; k < N_SERIES; k++) {
        series[k] = calloc((size_t)a.iterations, sizeof(double));
        ok = ok && series[k];
    }
    raw_floor *raw = NULL;
    int rc = 1;
    if (request_init(&r, &a) != 0 || !ok) {
        fprintf(stderr, "bench_service: out of memory\n");
    } else if (raw_floor_start(a.model, &r.engine, &raw) == 0) {
        grpc_init(); /* after the fork: the raw server holds no gRPC state */
        rc = time_all(&a, &r, raw, series);
        grpc_shutdown_blocking();
        raw_floor_stop(raw);
    }
    if (rc == 0) report(&a, series, diff);
    request_free(&r);
    for (int k = 0; k < N_SERIES; k++)
        free(series[k]);
    free(diff);
    return rc ? 1 : 0;
}
