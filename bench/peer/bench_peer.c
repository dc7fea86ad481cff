/*
 * bench_peer — the engine against llama.cpp on one GGUF file, in one
 * process (docs/benchmarks.md#llamacpp): both open the file, then score the
 * same token-id request in alternating rounds at the same thread count, so
 * that both see the same machine conditions; each round the other side goes
 * first.
 *
 *   bench_peer --model FILE --request FILE --llama-lib DIR [--threads N]
 *              [--precision auto|f32|bf16|bf16x2|int8|int8x2] [--isa auto|TIER]
 *              [--rounds N] [--warmup N] [--llama-attention default|f32]
 *              [--expect-max-delta X]
 *
 * The request is lmscore-local's JSON of token ids (peer_request.h). The
 * engine runs at the compute tier --isa names, as lmscore-local does, with
 * no prefix cache, so that every round computes the query as llama.cpp's
 * does (llama_peer.h). --warmup rounds (default 1) are not reported.
 * llama.cpp's attention is its default (flash attention, f16 K and V), or
 * with --llama-attention f32 its f32 path, the one to set against the
 * engine's --precision f32. Prints JSON: per side the seconds and CPU share
 * (the process's CPU time over wall time × threads) of each round and the
 * last round's log-probabilities; how each side computed; the largest
 * |Δ logprob| between the sides. --expect-max-delta makes a larger one
 * exit 1.
 */
#include <json-c/json.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "llama_peer.h"
#include "lmscore.h"
#include "peer_request.h"

typedef struct {
    const char *model, *request, *llama_lib, *isa;
    int threads, rounds, warmup;
    bool llama_f32_attention;
    lms_precision precision;
    double expect_max_delta; /* < 0: none */
} options;

/* One side's rounds. */
typedef struct {
    json_object *seconds, *cpu_share;
} timings;

static int usage(void)
{
    fprintf(
        stderr,
        "usage: bench_peer --model FILE --request FILE --llama-lib DIR [--threads N]\n"
        "                  [--precision auto|f32|bf16|bf16x2|int8|int8x2] [--isa %s] [--rounds N]\n"
        "                  [--warmup N] [--llama-attention default|f32]\n"
        "                  [--expect-max-delta X]\n",
        lms_isa_names());
    return 2;
}

static int parse_options(int argc, char **argv, options *o)
{
    *o = (options){.isa = "auto",
                   .threads = (int)sysconf(_SC_NPROCESSORS_ONLN),
                   .rounds = 3,
                   .warmup = 1,
                   .expect_max_delta = -1};
    for (int i = 1; i < argc; i += 2) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        char *end = NULL;
        if (!v) return usage();
        if (!strcmp(a, "--model"))
            o->model = v;
        else if (!strcmp(a, "--request"))
            o->request = v;
        else if (!strcmp(a, "--llama-lib"))
            o->llama_lib = v;
        else if (!strcmp(a, "--threads"))
            o->threads = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--rounds"))
            o->rounds = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--warmup"))
            o->warmup = (int)strtol(v, &end, 10);
        else if (!strcmp(a, "--expect-max-delta"))
            o->expect_max_delta = strtod(v, &end);
        else if (!strcmp(a, "--precision") && lms_precision_parse(v, &o->precision))
            continue;
        else if (!strcmp(a, "--isa") && lms_isa_known(v))
            o->isa = v;
        else if (!strcmp(a, "--llama-attention") && (!strcmp(v, "default") || !strcmp(v, "f32")))
            o->llama_f32_attention = !strcmp(v, "f32");
        else
            return usage();
        if (end && *end) return usage();
    }
    if (!o->model || !o->request || !o->llama_lib || o->threads < 1 || o->rounds < 1 ||
        o->warmup < 0)
        return usage();
    return 0;
}

static json_object *matrix(const float *x, int32_t rows, int32_t cols)
{
    json_object *a = json_object_new_array_ext(rows);
    for (int32_t i = 0; i < rows; i++) {
        json_object *row = json_object_new_array_ext(cols);
        for (int32_t k = 0; k < cols; k++)
            json_object_array_add(row, json_object_new_double(x[(size_t)i * (size_t)cols + k]));
        json_object_array_add(a, row);
    }
    return a;
}

static void record(timings *t, double wall, double cpu, int threads)
{
    json_object_array_add(t->seconds, json_object_new_double(wall));
    json_object_array_add(t->cpu_share,
                          json_object_new_double(wall > 0 ? cpu / (wall * threads) : 0));
}

/* Runs one side's round; records it when keep. */
static lms_status run_llama(llama_peer *peer, const lms_score_request *req, float *logprobs,
                            timings *t, const options *o, bool keep, lms_error *err)
{
    const double wall = monotonic_seconds(), cpu = process_cpu_seconds();
    const lms_status st = llama_peer_score(peer, req, logprobs, err);
    if (keep) record(t, monotonic_seconds() - wall, process_cpu_seconds() - cpu, o->threads);
    return st;
}

static lms_status run_engine(lms_engine *engine, const lms_score_request *req,
                             lms_score_result *res, timings *t, const options *o, bool keep,
                             lms_error *err)
{
    lms_score_result_free(res);
    const double wall = monotonic_seconds(), cpu = process_cpu_seconds();
    const lms_status st = lms_engine_score(engine, req, NULL, res, err);
    if (keep) record(t, monotonic_seconds() - wall, process_cpu_seconds() - cpu, o->threads);
    return st;
}

static json_object *side(timings *t, json_object *logprobs)
{
    json_object *o = json_object_new_object();
    json_object_object_add(o, "seconds", t->seconds);
    json_object_object_add(o, "cpu_share", t->cpu_share);
    json_object_object_add(o, "logprobs", logprobs);
    return o;
}

static double max_abs_delta(const float *a, const float *b, size_t n)
{
    double max = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - (double)b[i]);
        max = d > max || isnan(d) ? d : max;
    }
    return max;
}

/* The rounds, then the report; returns the exit status. */
static int run(const options *o, const peer_request *r, lms_engine *engine, llama_peer *peer)
{
    const lms_score_request *req = &r->req;
    const size_t n = (size_t)req->n_items * (size_t)req->n_labels;
    float *llama_lp = malloc(n * sizeof *llama_lp);
    lms_score_result res = {0};
    timings lt = {json_object_new_array(), json_object_new_array()};
    timings et = {json_object_new_array(), json_object_new_array()};
    lms_error err = {0};
    lms_status st = llama_lp ? LMS_OK : lms_fail(&err, LMS_ERR_NOMEM, NULL, NULL, "no memory");
    for (int round = 0; round < o->warmup + o->rounds && st == LMS_OK; round++) {
        const bool keep = round >= o->warmup;
        if (round % 2 == 0) {
            st = run_llama(peer, req, llama_lp, &lt, o, keep, &err);
            if (st == LMS_OK) st = run_engine(engine, req, &res, &et, o, keep, &err);
        } else {
            st = run_engine(engine, req, &res, &et, o, keep, &err);
            if (st == LMS_OK) st = run_llama(peer, req, llama_lp, &lt, o, keep, &err);
        }
    }
    int rc = 0;
    if (st != LMS_OK) {
        fprintf(stderr, "bench_peer: %s: %s\n", lms_status_name(st), err.msg);
        json_object_put(lt.seconds);
        json_object_put(lt.cpu_share);
        json_object_put(et.seconds);
        json_object_put(et.cpu_share);
        rc = 1;
    } else {
        lms_model_info mi;
        lms_engine_model_info(engine, &mi);
        const double delta = max_abs_delta(llama_lp, res.logprobs, n);
        json_object *out = json_object_new_object();
        json_object_object_add(out, "model", json_object_new_string(o->model));
        json_object_object_add(out, "threads", json_object_new_int(o->threads));
        json_object *l = side(&lt, matrix(llama_lp, req->n_items, req->n_labels));
        json_object_object_add(l, "features", json_object_new_string(llama_peer_features(peer)));
        json_object_object_add(l, "attention",
                               json_object_new_string(o->llama_f32_attention ? "f32" : "default"));
        json_object_object_add(out, "llama", l);
        json_object *e = side(&et, matrix(res.logprobs, req->n_items, req->n_labels));
        json_object_object_add(e, "precision", json_object_new_string(mi.precision));
        json_object_object_add(e, "precision_reason", json_object_new_string(mi.precision_reason));
        json_object_object_add(e, "isa", json_object_new_string(mi.isa));
        json_object_object_add(e, "kernels", json_object_new_string(mi.kernels));
        json_object_object_add(e, "weights", json_object_new_string(mi.weights));
        json_object_object_add(e, "algorithm",
                               json_object_new_string(lms_algorithm_name(res.algorithm)));
        json_object_object_add(out, "lmscore", e);
        json_object_object_add(out, "max_abs_delta", json_object_new_double(delta));
        /* %.9g round-trips a float exactly */
        json_c_set_serialization_double_format("%.9g", JSON_C_OPTION_GLOBAL);
        puts(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN));
        json_object_put(out);
        if (o->expect_max_delta >= 0 && !(delta <= o->expect_max_delta)) {
            fprintf(stderr,
                    "bench_peer: max |Δ logprob| between llama.cpp and lmscore is %g, "
                    "over the expected %g\n",
                    delta, o->expect_max_delta);
            rc = 1;
        }
    }
    lms_score_result_free(&res);
    free(llama_lp);
    return rc;
}

int main(int argc, char **argv)
{
    options o;
    if (parse_options(argc, argv, &o)) return 2;
    peer_request r;
    lms_error err = {0};
    if (peer_request_read(o.request, &r, &err) != LMS_OK) {
        fprintf(stderr, "bench_peer: %s\n", err.msg);
        return 1;
    }
    /* The engine's threads are OpenMP's, as the daemon's workers set them. */
    omp_set_num_threads(o.threads);
    lms_engine_options opt;
    lms_engine_options_default(&opt);
    opt.precision = o.precision;
    opt.isa = o.isa;
    opt.prefix_cache_bytes = 0;
    lms_engine *engine = NULL;
    llama_peer *peer = NULL;
    const int64_t tokens = peer_request_tokens(&r);
    const llama_peer_settings settings = {o.threads,
                                          tokens > INT32_MAX ? INT32_MAX : (int32_t)tokens,
                                          r.req.n_items + 1, o.llama_f32_attention};
    int rc = 1;
    if (lms_engine_open(o.model, &opt, &engine, &err) != LMS_OK)
        fprintf(stderr, "bench_peer: lmscore: %s: %s\n", o.model, err.msg);
    else if (llama_peer_open(o.llama_lib, o.model, &settings, &peer, &err) != LMS_OK)
        fprintf(stderr, "bench_peer: llama.cpp: %s\n", err.msg);
    else
        rc = run(&o, &r, engine, peer);
    llama_peer_close(peer);
    lms_engine_close(engine);
    peer_request_free(&r);
    return rc;
}
