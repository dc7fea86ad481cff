/*
 * bench_service.c — what the gRPC service adds to a unary Score: the same
 * request (a query and 10 items by default) timed in-process with
 * lms_engine_score and over gRPC against a running lmscored (a gRPC core C
 * client, one call at a time), p50/p99 of each, their difference and the
 * percentiles of the per-call differences, plus Health.Check round trips
 * (what the transport alone costs): one right after an in-process score, as
 * the Score call finds the machine, and one right after the Score call.
 *
 *   bench_service --model PATH --target HOST:PORT [--iterations N]
 *                 [--warmup N] [--items N] [--item-tokens N] [--query-tokens N]
 *
 * Prints a Markdown table row set; run.sh starts the daemon and calls this.
 */
#include <grpc/byte_buffer_reader.h>
#include <grpc/grpc.h>
#include <grpc/grpc_security.h>
#include <grpc/support/time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lmscore.h"
#include "lmscore/v1/score.pb-c.h"

typedef struct {
    const char *model, *target;
    int iterations, warmup, items, item_tokens, query_tokens;
} bench_args;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
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
} bench_request;

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
    return 0;
}

static void request_free(bench_request *r)
{
    free(r->query);
    free(r->item_ids);
    free(r->items);
    free(r->item_tok);
    free(r->item_in);
    free(r->item_ptrs);
}

/* One unary call; returns the gRPC status (GRPC_STATUS_OK on success). */
static grpc_status_code call_unary(grpc_channel *ch, grpc_completion_queue *cq, const char *path,
                                   grpc_slice payload, size_t *resp_len)
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
    *resp_len = recv ? grpc_byte_buffer_length(recv) : 0;
    if (recv) grpc_byte_buffer_destroy(recv);
    grpc_byte_buffer_destroy(send);
    grpc_slice_unref(details);
    grpc_metadata_array_destroy(&initial);
    grpc_metadata_array_destroy(&trailing);
    grpc_call_unref(call);
    return status;
}

typedef struct {
    grpc_channel *ch;
    grpc_completion_queue *cq;
    grpc_slice payload;
} grpc_client;

static void client_open(grpc_client *g, const bench_args *a, const bench_request *r)
{
    size_t len = lmscore__v1__score_request__get_packed_size(&r->proto);
    g->payload = grpc_slice_malloc(len);
    lmscore__v1__score_request__pack(&r->proto, GRPC_SLICE_START_PTR(g->payload));
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
    grpc_slice_unref(g->payload);
}

/* The timings of one run, one entry per timed iteration (in ms). */
typedef struct {
    double *local;      /* lms_engine_score in this process */
    double *remote;     /* the same request as a unary Score call */
    double *check_cold; /* Health.Check after an in-process score, like the Score call */
    double *check_warm; /* Health.Check right after the Score call */
} bench_samples;

static lms_status score_local(lms_engine *e, const bench_request *r, lms_error *err)
{
    lms_score_result res;
    memset(&res, 0, sizeof res);
    lms_status st = lms_engine_score(e, &r->engine, NULL, &res, err);
    lms_score_result_free(&res);
    return st;
}

/* Times each iteration's request both ways, alternating, so that the load
 * of a shared machine weighs on both paths alike. The Score call comes right
 * after an in-process score, with the client's caches cold and both
 * processes idle for its length; so does one of the two Health.Check calls,
 * the transport's cost in the same conditions. */
static int time_both(const bench_args *a, const bench_request *r, const bench_samples *out)
{
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    lms_engine *e;
    lms_error err = {0};
    if (lms_engine_open(a->model, &opt, &e, &err) != LMS_OK) {
        fprintf(stderr, "bench_service: %s\n", err.msg);
        return -1;
    }
    grpc_client g;
    client_open(&g, a, r);
    int rc = 0;
    const char *check = "/grpc.health.v1.Health/Check";
    for (int i = 0; i < a->warmup + a->iterations && rc == 0; i++) {
        size_t score_len = 0, check_len = 0;
        double t0 = now_ms();
        lms_status st = score_local(e, r, &err);
        double t1 = now_ms();
        grpc_status_code gst =
            call_unary(g.ch, g.cq, "/lmscore.v1.ScoreService/Score", g.payload, &score_len);
        double t2 = now_ms();
        /* the transport alone (Health.Check is answered on the CQ thread) */
        grpc_status_code warm = call_unary(g.ch, g.cq, check, grpc_empty_slice(), &check_len);
        double t3 = now_ms();
        if (st == LMS_OK) st = score_local(e, r, &err);
        double t4 = now_ms();
        grpc_status_code cold = call_unary(g.ch, g.cq, check, grpc_empty_slice(), &check_len);
        double t5 = now_ms();
        if (st != LMS_OK) {
            fprintf(stderr, "bench_service: %s\n", err.msg);
            rc = -1;
        } else if (gst != GRPC_STATUS_OK || warm != GRPC_STATUS_OK || cold != GRPC_STATUS_OK ||
                   score_len == 0) {
            fprintf(stderr, "bench_service: Score/Check/Check failed with status %d/%d/%d\n",
                    (int)gst, (int)warm, (int)cold);
            rc = -1;
        } else if (i >= a->warmup) {
            int k = i - a->warmup;
            out->local[k] = t1 - t0;
            out->remote[k] = t2 - t1;
            out->check_warm[k] = t3 - t2;
            out->check_cold[k] = t5 - t4;
        }
    }
    client_close(&g);
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

int main(int argc, char **argv)
{
    bench_args a;
    if (parse_args(argc, argv, &a) != 0) {
        fprintf(stderr, "usage: bench_service --model PATH --target HOST:PORT [--iterations N] "
                        "[--warmup N] [--items N] [--item-tokens N] [--query-tokens N]\n");
        return 1;
    }
    bench_request r;
    int n = a.iterations;
    bench_samples s = {.local = calloc((size_t)n, sizeof(double)),
                       .remote = calloc((size_t)n, sizeof(double)),
                       .check_cold = calloc((size_t)n, sizeof(double)),
                       .check_warm = calloc((size_t)n, sizeof(double))};
    double *diff = calloc((size_t)n, sizeof *diff);
    int rc = 1;
    if (request_init(&r, &a) != 0 || !s.local || !s.remote || !s.check_cold || !s.check_warm ||
        !diff) {
        fprintf(stderr, "bench_service: out of memory\n");
    } else {
        grpc_init();
        rc = time_both(&a, &r, &s);
        grpc_shutdown_blocking();
    }
    if (rc == 0) {
        for (int i = 0; i < n; i++)
            diff[i] = s.remote[i] - s.local[i];
        double l50 = percentile(s.local, n, 0.50), l99 = percentile(s.local, n, 0.99);
        double g50 = percentile(s.remote, n, 0.50), g99 = percentile(s.remote, n, 0.99);
        printf("Unary Score, %d items of %d tokens, query %d tokens, %d calls after %d warm-up\n\n",
               a.items, a.item_tokens, a.query_tokens, n, a.warmup);
        printf("| path | p50 ms | p99 ms |\n| --- | ---: | ---: |\n");
        printf("| in-process lms_engine_score | %.3f | %.3f |\n", l50, l99);
        printf("| gRPC unary Score (loopback) | %.3f | %.3f |\n", g50, g99);
        printf("| service overhead (difference) | %.3f | %.3f |\n", g50 - l50, g99 - l99);
        printf("| service overhead (per-call differences) | %.3f | %.3f |\n",
               percentile(diff, n, 0.50), percentile(diff, n, 0.99));
        printf("| gRPC Health.Check after an in-process score (transport alone) | %.3f | %.3f |\n",
               percentile(s.check_cold, n, 0.50), percentile(s.check_cold, n, 0.99));
        printf("| gRPC Health.Check right after the Score call (warm transport) | %.3f | %.3f |\n",
               percentile(s.check_warm, n, 0.50), percentile(s.check_warm, n, 0.99));
    }
    request_free(&r);
    free(s.local);
    free(s.remote);
    free(s.check_cold);
    free(s.check_warm);
    free(diff);
    return rc ? 1 : 0;
}
