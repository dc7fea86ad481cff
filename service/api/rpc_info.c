/*
 * rpc_info.c — Tokenize (on the worker pool: a long text is real work) and
 * GetModelInfo (answered on the CQ thread from the loaded model's
 * configuration, the server's limits and its counters).
 */
#include "rpc_info.h"

#include <stdlib.h>
#include <string.h>

#include "lmscore/v1/score.pb-c.h"
#include "metrics.h"
#include "score_request.h"

static service_job_step tokenize_run(service_job *job)
{
    const Lmscore__V1__TokenizeRequest *req = (const Lmscore__V1__TokenizeRequest *)job->request;
    const lms_tokenizer *tok = lms_engine_tokenizer(job->engine);
    rpc_status st;
    int32_t *ids = NULL;
    size_t n = 0;
    lms_error err = {0};
    const service *svc = call_ctx(job->c);
    if (!tok) {
        rpc_status_set(&st, GRPC_STATUS_INVALID_ARGUMENT, "no_tokenizer", "text",
                       "text: the model has no tokenizer");
        service_job_finish(job, &st);
    } else if (score_text_check(req->text, svc->cfg->max_text_bytes, "text", &err) != LMS_OK ||
               lms_tokenizer_encode(tok, req->text, strlen(req->text), req->add_special_tokens,
                                    &ids, &n, &err) != LMS_OK) {
        rpc_status_from_error(&st, &err);
        service_job_finish(job, &st);
    } else {
        Lmscore__V1__TokenizeResponse resp = LMSCORE__V1__TOKENIZE_RESPONSE__INIT;
        resp.n_token_ids = n;
        resp.token_ids = ids;
        service_job_reply(job, &resp.base);
    }
    free(ids);
    return SERVICE_JOB_DONE;
}

static void on_tokenize(call *c, const uint8_t *msg, size_t len)
{
    service *svc = call_ctx(c);
    lms_engine *engine;
    ProtobufCMessage *req =
        service_begin(svc, c, &lmscore__v1__tokenize_request__descriptor, msg, len, &engine);
    if (!req) return;
    service_job *job = service_job_new(sizeof *job, c, engine, req, tokenize_run);
    if (job) service_job_submit(svc, job);
}

static void on_get_model_info(call *c, const uint8_t *msg, size_t len)
{
    service *svc = call_ctx(c);
    lms_engine *engine;
    ProtobufCMessage *req =
        service_begin(svc, c, &lmscore__v1__get_model_info_request__descriptor, msg, len, &engine);
    if (!req) return;
    protobuf_c_message_free_unpacked(req, NULL);

    lms_model_info mi;
    lms_engine_model_info(engine, &mi);
    const lms_engine_options *eo = lms_engine_options_get(engine);
    const lmscored_config *cfg = svc->cfg;

    Lmscore__V1__GetModelInfoResponse resp = LMSCORE__V1__GET_MODEL_INFO_RESPONSE__INIT;
    resp.model_name = mi.name;
    resp.architecture = (char *)mi.architecture;
    resp.vocab_size = mi.vocab_size;
    resp.context_length = mi.context_length;
    Lmscore__V1__Algorithm algorithms[] = {LMSCORE__V1__ALGORITHM__ALGORITHM_SERIAL,
                                           LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_DENSE,
                                           LMSCORE__V1__ALGORITHM__ALGORITHM_PACKED_SEGMENT,
                                           LMSCORE__V1__ALGORITHM__ALGORITHM_PREFILL_EXTEND};
    resp.n_algorithms = sizeof algorithms / sizeof algorithms[0];
    resp.algorithms = algorithms;
    resp.default_algorithm = score_algorithm_to_proto(eo->algorithm);
    resp.has_tokenizer = lms_engine_tokenizer(engine) != NULL;
    resp.delimiter_token_id = eo->delimiter;
    resp.num_layers = mi.n_layers;
    resp.hidden_size = mi.d_model;
    resp.num_attention_heads = mi.n_heads;
    resp.num_key_value_heads = mi.n_kv_heads;
    resp.precision = (char *)mi.precision;
    resp.precision_reason = mi.precision_reason;
    resp.weight_formats = mi.weights;
    resp.kernels = mi.kernels;
    resp.weight_bytes = mi.weight_bytes;
    resp.weight_parameters = mi.parameters;
    resp.isa = (char *)mi.isa;
    resp.isa_dropped = mi.isa_dropped;
    resp.kv_cache_dtype = (char *)mi.kv_dtype;

    Lmscore__V1__Limits limits = LMSCORE__V1__LIMITS__INIT;
    limits.max_items = eo->max_items;
    limits.max_sequence_tokens = eo->max_sequence_tokens;
    limits.max_message_bytes = cfg->max_message_bytes;
    limits.max_packed_tokens = eo->max_packed_tokens;
    limits.workers = cfg->workers;
    limits.worker_threads = svc->worker_threads;
    limits.queue_depth = cfg->queue_depth;
    limits.max_text_bytes = cfg->max_text_bytes;
    resp.limits = &limits;

    metrics_snapshot snap;
    metrics_snapshot_get(&snap);
    Lmscore__V1__ServerStats stats = LMSCORE__V1__SERVER_STATS__INIT;
    stats.requests_total = snap.requests_total;
    stats.items_total = snap.items_total;
    stats.in_flight_calls = snap.in_flight_calls;
    stats.in_flight_jobs = snap.in_flight_jobs;
    stats.uptime_seconds = snap.uptime_seconds;
    stats.engine_bytes = (int64_t)lms_alloc_current_bytes();
    Lmscore__V1__ServerStats__ErrorsByCodeEntry entries[METRICS_N_CODES];
    Lmscore__V1__ServerStats__ErrorsByCodeEntry *entry_ptrs[METRICS_N_CODES];
    for (int code = 0; code < METRICS_N_CODES; code++) {
        if (!snap.errors_by_code[code]) continue;
        Lmscore__V1__ServerStats__ErrorsByCodeEntry *e = &entries[stats.n_errors_by_code];
        lmscore__v1__server_stats__errors_by_code_entry__init(e);
        e->key = (char *)metrics_code_name((grpc_status_code)code);
        e->value = snap.errors_by_code[code];
        entry_ptrs[stats.n_errors_by_code++] = e;
    }
    stats.errors_by_code = entry_ptrs;
    resp.stats = &stats;
    call_reply(c, &resp.base);
}

void rpc_info_init(rpc_info_handlers *h, service *svc)
{
    h->tokenize = (call_handler){.path = "/lmscore.v1.ScoreService/Tokenize",
                                 .shape = CALL_UNARY,
                                 .ctx = svc,
                                 .on_message = on_tokenize};
    h->get_model_info = (call_handler){.path = "/lmscore.v1.ScoreService/GetModelInfo",
                                       .shape = CALL_UNARY,
                                       .ctx = svc,
                                       .on_message = on_get_model_info};
}
