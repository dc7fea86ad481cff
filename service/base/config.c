/*
 * config.c — flags and LMSCORE_* environment variables → lmscored_config.
 * One table describes every option (flag, variable, help, parser), so
 * --help and the parsers cannot drift apart.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum {
    OPT_PATH,
    OPT_LISTEN, /* [HOST]:PORT; ":PORT" is stored as "0.0.0.0:PORT" */
    OPT_INT,
    OPT_BYTES,
    OPT_MILLIS,
    OPT_ALGO,
    OPT_PRECISION,
    OPT_KV_DTYPE,
    OPT_ISA,
    OPT_FORMAT,
    OPT_LEVEL,
    OPT_SWITCH /* on|off into a bool */
} opt_kind;

typedef struct {
    const char *flag; /* long flag without dashes */
    const char *env;
    const char *arg; /* metavariable for --help */
    const char *help;
    opt_kind kind;
    size_t offset;    /* into lmscored_config */
    size_t size;      /* of that member */
    int64_t min, max; /* OPT_INT, OPT_BYTES, OPT_MILLIS */
} option_spec;

#define AT(member) offsetof(lmscored_config, member), sizeof(((lmscored_config *)0)->member)

static const option_spec options[] = {
    {"model", "LMSCORE_MODEL", "PATH", "GGUF file or Hugging Face directory to serve (required)",
     OPT_PATH, AT(model_path), 0, 0},
    {"listen", "LMSCORE_LISTEN", "[HOST]:PORT",
     "address to listen on; :PORT is 0.0.0.0:PORT, every address; port 0 picks a free port "
     "(default 0.0.0.0:50051)",
     OPT_LISTEN, AT(listen), 0, 0},
    {"metrics-listen", "LMSCORE_METRICS_LISTEN", "[HOST]:PORT",
     "serve Prometheus metrics over HTTP at http://HOST:PORT/metrics; :PORT and port 0 as for "
     "--listen (default: none)",
     OPT_LISTEN, AT(metrics_listen), 0, 0},
    {"http-listen", "LMSCORE_HTTP_LISTEN", "[HOST]:PORT",
     "also serve the HTTP JSON API (POST /v1/score, /v1/rerank, /v2/rerank, /rerank; GET "
     "/health, /v1/models, /openapi.json) at HOST:PORT, with TLS when --tls-cert is given; :PORT "
     "and port 0 as for --listen (default: none)",
     OPT_LISTEN, AT(http_listen), 0, 0},
    {"http-max-connections", "LMSCORE_HTTP_MAX_CONNECTIONS", "N",
     "HTTP connections held at once; past it the oldest connection still sending its request "
     "(or idle) is closed for a new one, and when none is, the new one is answered 503 (default "
     "256)",
     OPT_INT, AT(http_max_connections), 1, 65536},
    {"http-max-connections-per-peer", "LMSCORE_HTTP_MAX_CONNECTIONS_PER_PEER", "N",
     "HTTP connections held at once from one IP address, with the same rule (default 64)", OPT_INT,
     AT(http_max_connections_per_peer), 1, 65536},
    {"http-header-timeout", "LMSCORE_HTTP_HEADER_TIMEOUT", "DURATION",
     "an HTTP request's line and headers must arrive within this of the connection's start or "
     "of the previous answer, and an answer be taken within this; past it the connection is "
     "closed (default 10s)",
     OPT_MILLIS, AT(http_header_timeout_ms), 100, INT32_MAX},
    {"http-body-min-rate", "LMSCORE_HTTP_BODY_MIN_RATE", "BYTES",
     "an HTTP request body must arrive at this many bytes a second on average, after a grace "
     "of --http-header-timeout; a slower one's connection is closed (default 16K)",
     OPT_BYTES, AT(http_body_min_rate), 1, INT32_MAX},
    {"http-cors-allow-origin", "LMSCORE_HTTP_CORS_ALLOW_ORIGIN", "ORIGIN[,ORIGIN...]",
     "answer browser pages from these origins (e.g. https://app.example.com, exactly as the "
     "Origin header says them; * for any) with CORS headers, and their preflight OPTIONS "
     "requests (default: none, no CORS)",
     OPT_PATH, AT(http_cors_allow_origin), 0, 0},
    {"rerank-profile", "LMSCORE_RERANK_PROFILE", "NAME|FILE",
     "how a rerank call (gRPC Rerank, POST /v1/rerank, /v2/rerank, /rerank) scores a document: "
     "yes-no, qwen3-reranker, or a JSON file "
     "{\"template\": \"...{query}...{document}...\", \"labels\": [\"yes\", \"no\"]} "
     "(default yes-no; see docs/api.md)",
     OPT_PATH, AT(rerank_profile), 0, 0},
    {"truncate-documents", "LMSCORE_TRUNCATE_DOCUMENTS", "on|off",
     "on: a rerank document (gRPC Rerank, POST /v1/rerank, /rerank) longer than its prompt's "
     "room is cut inside its own tokens, keeping the template's tail, when the request does "
     "not say (TEI's truncate, vLLM's truncate_prompt_tokens); off: it is refused, "
     "sequence_too_long. /v2/rerank always cuts to max_tokens_per_doc, as Cohere; /v1/score "
     "only when asked (default off)",
     OPT_SWITCH, AT(truncate_documents), 0, 0},
    {"served-model-name", "LMSCORE_SERVED_MODEL_NAME", "NAME[,NAME...]",
     "the names a request's \"model\" may carry on the HTTP API (as vLLM's flag), the first "
     "one answered in \"model\" and listed first by GET /v1/models (default: the model file's "
     "name)",
     OPT_PATH, AT(served_model_names), 0, 0},
    {"tls-cert", "LMSCORE_TLS_CERT", "PEM", "server certificate chain; serve TLS (needs --tls-key)",
     OPT_PATH, AT(tls_cert), 0, 0},
    {"tls-key", "LMSCORE_TLS_KEY", "PEM", "server private key (needs --tls-cert)", OPT_PATH,
     AT(tls_key), 0, 0},
    {"api-key-file", "LMSCORE_API_KEY_FILE", "FILE",
     "API keys, one per line: every call but the health checks (and /metrics) must carry "
     "\"authorization: Bearer KEY\" with one of them (default: none, every call is served)",
     OPT_PATH, AT(api_key_file), 0, 0},
    {"workers", "LMSCORE_WORKERS", "N",
     "requests scored at once, each by its own worker (default 1)", OPT_INT, AT(workers), 1, 256},
    {"threads", "LMSCORE_THREADS", "N",
     "engine threads in all, split evenly among the workers (default: OMP_NUM_THREADS when set, "
     "else the CPUs this process may use: its affinity mask capped by its cgroup CPU quota)",
     OPT_INT, AT(threads), 0, 4096},
    {"queue-depth", "LMSCORE_QUEUE_DEPTH", "N",
     "scoring jobs that may wait for a worker; beyond it calls get RESOURCE_EXHAUSTED "
     "(default 64)",
     OPT_INT, AT(queue_depth), 1, 1 << 20},
    {"max-message-bytes", "LMSCORE_MAX_MESSAGE_BYTES", "BYTES",
     "largest request or response message, with optional K/M/G suffix (default 16M)", OPT_BYTES,
     AT(max_message_bytes), 1024, INT32_MAX},
    {"max-receive-buffer", "LMSCORE_MAX_RECEIVE_BUFFER", "BYTES",
     "memory gRPC may hold for requests still arriving, over all connections; beyond it the "
     "calls buffering are refused (RESOURCE_EXHAUSTED) and idle connections closed (default: "
     "64M or 4 x --max-message-bytes, whichever is larger; at least --max-message-bytes)",
     OPT_BYTES, AT(max_receive_buffer), 0, INT64_MAX},
    {"max-items", "LMSCORE_MAX_ITEMS", "N",
     "most items per request or per ScoreItems batch (default 10000)", OPT_INT, AT(max_items), 1,
     INT32_MAX},
    {"max-sequence-tokens", "LMSCORE_MAX_SEQUENCE_TOKENS", "N",
     "longest query+item sequence; 0 means the model's context length (default 0)", OPT_INT,
     AT(max_sequence_tokens), 0, INT32_MAX},
    {"max-text-bytes", "LMSCORE_MAX_TEXT_BYTES", "BYTES",
     "longest text (a query, an item, a label, Tokenize's text), checked before it is "
     "tokenized; a longer one is refused (INVALID_ARGUMENT, text_too_long) (default 1M)",
     OPT_BYTES, AT(max_text_bytes), 1, INT32_MAX},
    {"algorithm", "LMSCORE_ALGORITHM", "NAME",
     "auto|serial|packed_dense|packed_segment|prefill_extend: what ALGORITHM_UNSPECIFIED runs "
     "(default auto: the engine's cost model picks)",
     OPT_ALGO, AT(algorithm), 0, 0},
    {"precision", "LMSCORE_PRECISION", "NAME",
     "auto|f32|bf16|bf16x2|int8|int8x2: how the projections multiply (default auto: each weight "
     "in its checkpoint's own precision; bf16 and int8 from a higher-precision checkpoint trade "
     "accuracy for speed and memory; bf16x2 and int8x2 keep two values per activation, see "
     "docs/engine.md)",
     OPT_PRECISION, AT(precision), 0, 0},
    {"kv-cache-dtype", "LMSCORE_KV_CACHE_DTYPE", "NAME",
     "auto|f32|f16: how attention holds keys and values, in a batch and in the prefix cache "
     "(default auto: f16 where the projections are not all f32, else f32; f32 makes attention "
     "as exact as the f32 precision's at twice the cache's bytes per token)",
     OPT_KV_DTYPE, AT(kv_dtype), 0, 0},
    {"isa", "LMSCORE_ISA", "NAME",
     "the compute tier: the instruction set of the engine's kernels, auto or one of the tiers "
     "listed at the end (default auto: the fastest the CPU runs; the vector tiers give the "
     "same numbers, avx512-bf16 and amx numbers within the precision gates, docs/engine.md)",
     OPT_ISA, AT(isa), 0, 0},
    {"multi-item-scoring-delimiter", "LMSCORE_MULTI_ITEM_SCORING_DELIMITER", "TOKEN_ID",
     "SGLang-style delimiter token: sequences become query <d> item (default -1: none)", OPT_INT,
     AT(delimiter), -1, INT32_MAX},
    {"max-packed-tokens", "LMSCORE_MAX_PACKED_TOKENS", "N",
     "most token rows in one packed forward pass (default 8192)", OPT_INT, AT(max_packed_tokens), 1,
     INT32_MAX},
    {"prefix-cache-bytes", "LMSCORE_PREFIX_CACHE_BYTES", "BYTES",
     "budget of the query KV prefix cache, with optional K/M/G suffix; 0 disables it "
     "(default 256M)",
     OPT_BYTES, AT(prefix_cache_bytes), 0, INT64_MAX},
    {"drain-timeout", "LMSCORE_DRAIN_TIMEOUT", "DURATION",
     "on SIGTERM, how long in-flight calls may finish before they end UNAVAILABLE (draining); "
     "e.g. 30s, 500ms (default 30s)",
     OPT_MILLIS, AT(drain_timeout_ms), 0, INT64_MAX},
    {"max-connection-idle", "LMSCORE_MAX_CONNECTION_IDLE", "DURATION",
     "close a connection that has had no call for this long (GOAWAY); 0: never (default 5m)",
     OPT_MILLIS, AT(max_connection_idle_ms), 0, INT32_MAX},
    {"max-connection-age", "LMSCORE_MAX_CONNECTION_AGE", "DURATION",
     "ask a client to reconnect after this long (GOAWAY, +-10% jitter), so that it re-resolves "
     "and spreads over new replicas; 0: never (default 30m)",
     OPT_MILLIS, AT(max_connection_age_ms), 0, INT32_MAX},
    {"max-connection-age-grace", "LMSCORE_MAX_CONNECTION_AGE_GRACE", "DURATION",
     "how long the calls of a connection past its age may still run before it is closed; this "
     "also bounds a stream that sends nothing (default 5m)",
     OPT_MILLIS, AT(max_connection_age_grace_ms), 0, INT32_MAX},
    {"keepalive-time", "LMSCORE_KEEPALIVE_TIME", "DURATION",
     "ping a connection after this long without traffic and close it when the ping is not "
     "answered within 20s (a vanished client or a load balancer that dropped it) (default 1m)",
     OPT_MILLIS, AT(keepalive_time_ms), 1000, INT32_MAX},
    {"keepalive-min-time", "LMSCORE_KEEPALIVE_MIN_TIME", "DURATION",
     "the shortest interval at which a client may ping; a client that pings faster is sent "
     "GOAWAY (too_many_pings) (default 10s)",
     OPT_MILLIS, AT(keepalive_min_time_ms), 0, INT32_MAX},
    {"log-format", "LMSCORE_LOG_FORMAT", "FORMAT",
     "text|json, for logs on stderr; under systemd logs go to the journal (default text)",
     OPT_FORMAT, AT(log_format), 0, 0},
    {"log-level", "LMSCORE_LOG_LEVEL", "LEVEL",
     "error|warn|notice|info|debug; debug logs every call (default info)", OPT_LEVEL, AT(log_level),
     0, 0},
};
#define N_OPTIONS (sizeof options / sizeof options[0])

static void defaults(lmscored_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    snprintf(cfg->listen, sizeof cfg->listen, "0.0.0.0:50051");
    cfg->http_max_connections = 256;
    cfg->http_max_connections_per_peer = 64;
    cfg->http_header_timeout_ms = 10000;
    cfg->http_body_min_rate = 16 << 10;
    cfg->workers = 1;
    cfg->queue_depth = 64;
    cfg->max_message_bytes = 16 << 20;
    cfg->max_items = 10000;
    cfg->max_text_bytes = 1 << 20;
    cfg->algorithm = LMS_ALGO_AUTO;
    cfg->precision = LMS_PRECISION_AUTO;
    cfg->kv_dtype = LMS_KV_DTYPE_AUTO;
    snprintf(cfg->isa, sizeof cfg->isa, "auto");
    cfg->delimiter = -1;
    cfg->max_packed_tokens = 8192;
    cfg->prefix_cache_bytes = (size_t)256 << 20;
    cfg->drain_timeout_ms = 30000;
    cfg->max_connection_idle_ms = 5 * 60000;
    cfg->max_connection_age_ms = 30 * 60000;
    cfg->max_connection_age_grace_ms = 5 * 60000;
    cfg->keepalive_time_ms = 60000;
    cfg->keepalive_min_time_ms = 10000;
    cfg->log_format = LOG_FORMAT_TEXT;
    cfg->log_level = LOG_INFO;
}

static void print_help(FILE *out, const char *prog)
{
    fprintf(out,
            "Usage: %s --model PATH [options]\n"
            "lmscored serves lmscore.v1.ScoreService (plus grpc.health.v1 and server\n"
            "reflection) over gRPC, and with --http-listen the same scoring as an HTTP\n"
            "JSON API. Every option can also be set by its environment variable; a flag\n"
            "wins over the variable.\n\n",
            prog);
    for (size_t i = 0; i < N_OPTIONS; i++) {
        char left[80];
        snprintf(left, sizeof left, "--%s %s", options[i].flag, options[i].arg);
        fprintf(out, "  %-40s %s\n  %-40s   [env %s]\n", left, options[i].help, "", options[i].env);
    }
    fprintf(out, "  %-40s %s\n  %-40s %s\n", "--help", "print this help and exit", "--version",
            "print the version and exit");
    fprintf(out, "\n--isa takes %s\n", lms_isa_names());
}

/* Parses an integer with an optional unit: K/M/G (x1024) for bytes, ms/s/m
 * for durations (a bare number of a duration is seconds). */
static bool parse_scaled(const char *s, opt_kind kind, int64_t *out)
{
    errno = 0;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s) return false;
    int64_t scale = 1;
    if (kind == OPT_BYTES) {
        if (*end == 'K' || *end == 'k')
            scale = 1 << 10, end++;
        else if (*end == 'M' || *end == 'm')
            scale = 1 << 20, end++;
        else if (*end == 'G' || *end == 'g')
            scale = 1 << 30, end++;
    } else if (kind == OPT_MILLIS) {
        if (strcmp(end, "ms") == 0)
            scale = 1, end += 2;
        else if (strcmp(end, "s") == 0 || *end == '\0')
            scale = 1000, end += *end != '\0';
        else if (strcmp(end, "m") == 0)
            scale = 60000, end++;
    }
    if (*end != '\0' || v > INT64_MAX / scale || v < INT64_MIN / scale) return false;
    *out = v * scale;
    return true;
}

static lms_status set_option(lmscored_config *cfg, const option_spec *o, const char *value,
                             const char *source, lms_error *err)
{
    char *base = (char *)cfg + o->offset;
    int64_t v;
    switch (o->kind) {
    case OPT_PATH:
    case OPT_LISTEN: {
        /* the docs' ":8080", as Go's and Node's servers take it */
        const char *host = o->kind == OPT_LISTEN && value[0] == ':' ? "0.0.0.0" : "";
        if ((size_t)snprintf(base, o->size, "%s%s", host, value) >= o->size)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: value longer than %zu bytes", source, o->flag,
                            o->size - 1 - strlen(host));
        return LMS_OK;
    }
    case OPT_INT:
    case OPT_BYTES:
    case OPT_MILLIS:
        if (!parse_scaled(value, o->kind, &v) || v < o->min || v > o->max)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not a number in [%lld, %lld]", source, o->flag, value,
                            (long long)o->min, (long long)o->max);
        if (o->size == sizeof(int32_t)) {
            int32_t v32 = (int32_t)v; /* in range: max <= INT32_MAX for 4-byte members */
            memcpy(base, &v32, sizeof v32);
        } else {
            memcpy(base, &v, sizeof v); /* int64_t and size_t members; v >= min >= 0 */
        }
        return LMS_OK;
    case OPT_ALGO:
        if (!lms_algorithm_parse(value, (lms_algorithm *)base))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: unknown algorithm '%s'", source, o->flag, value);
        return LMS_OK;
    case OPT_PRECISION:
        if (!lms_precision_parse(value, (lms_precision *)base))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not auto, f32, bf16, bf16x2, int8 or int8x2", source,
                            o->flag, value);
        return LMS_OK;
    case OPT_KV_DTYPE:
        if (!lms_kv_dtype_parse(value, (lms_kv_dtype *)base))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not auto, f32 or f16", source, o->flag, value);
        return LMS_OK;
    case OPT_ISA:
        if (!lms_isa_known(value) || strlen(value) >= sizeof((lmscored_config *)0)->isa)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not one of %s", source, o->flag, value,
                            lms_isa_names());
        strcpy((char *)base, value);
        return LMS_OK;
    case OPT_FORMAT:
        if (!log_parse_format(value, (log_format *)base))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not text or json", source, o->flag, value);
        return LMS_OK;
    case OPT_LEVEL:
        if (!log_parse_level(value, (int *)base))
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: unknown log level '%s'", source, o->flag, value);
        return LMS_OK;
    case OPT_SWITCH:
        if (strcmp(value, "on") != 0 && strcmp(value, "off") != 0)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", o->flag,
                            "%s --%s: '%s' is not on or off", source, o->flag, value);
        *(bool *)base = strcmp(value, "on") == 0;
        return LMS_OK;
    }
    return lms_fail(err, LMS_ERR_INTERNAL, NULL, o->flag, "unhandled option kind");
}

/* --served-model-name: names that are not empty, hold no control byte,
 * come once each and are at most CONFIG_MAX_SERVED_NAMES. */
static lms_status check_served_names(const char *names, lms_error *err)
{
    if (!names[0]) return LMS_OK;
    const char *flag = "served-model-name";
    size_t n = 0;
    for (const char *p = names;; n++) {
        size_t len = strcspn(p, ",");
        if (len == 0)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                            "--%s: name %zu is empty", flag, n + 1);
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
                return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                                "--%s: name %zu holds a control character", flag, n + 1);
        for (const char *q = names; q < p; q += strcspn(q, ",") + 1)
            if (strcspn(q, ",") == len && strncmp(q, p, len) == 0)
                return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                                "--%s: \"%.*s\" is named twice", flag, (int)len, p);
        if (n + 1 > CONFIG_MAX_SERVED_NAMES)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", flag,
                            "--%s: more than %d names", flag, CONFIG_MAX_SERVED_NAMES);
        if (!p[len]) return LMS_OK;
        p += len + 1;
    }
}

lms_status config_parse(int argc, char **argv, lmscored_config *cfg, config_outcome *outcome,
                        lms_error *err)
{
    defaults(cfg);
    *outcome = CONFIG_RUN;
    for (size_t i = 0; i < N_OPTIONS; i++) {
        const char *v = getenv(options[i].env);
        if (v && *v) {
            lms_status st = set_option(cfg, &options[i], v, options[i].env, err);
            if (st != LMS_OK) return st;
        }
    }

    enum { HELP = N_OPTIONS, VERSION };
    struct option longopts[N_OPTIONS + 3];
    for (size_t i = 0; i < N_OPTIONS; i++)
        longopts[i] = (struct option){options[i].flag, required_argument, NULL, (int)i};
    longopts[N_OPTIONS] = (struct option){"help", no_argument, NULL, HELP};
    longopts[N_OPTIONS + 1] = (struct option){"version", no_argument, NULL, VERSION};
    longopts[N_OPTIONS + 2] = (struct option){NULL, 0, NULL, 0};

    optind = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        if (c == HELP) {
            print_help(stdout, argv[0]);
            *outcome = CONFIG_EXIT;
            return LMS_OK;
        }
        if (c == VERSION) {
            printf("lmscored %s\n", LMSCORED_VERSION);
            *outcome = CONFIG_EXIT;
            return LMS_OK;
        }
        if (c < 0 || c >= (int)N_OPTIONS)
            return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", argv[optind - 1],
                            "unknown or incomplete option '%s' (see --help)", argv[optind - 1]);
        lms_status st = set_option(cfg, &options[c], optarg, "flag", err);
        if (st != LMS_OK) return st;
    }
    if (optind < argc)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", argv[optind],
                        "unexpected argument '%s' (see --help)", argv[optind]);
    if (!cfg->model_path[0])
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", "model",
                        "--model (or LMSCORE_MODEL) is required");
    if (!cfg->max_receive_buffer)
        cfg->max_receive_buffer = cfg->max_message_bytes * 4 > (int64_t)64 << 20
                                      ? cfg->max_message_bytes * 4
                                      : (int64_t)64 << 20;
    if (cfg->max_receive_buffer < cfg->max_message_bytes)
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", "max-receive-buffer",
                        "--max-receive-buffer (%lld) is below --max-message-bytes (%lld): no "
                        "message that size could arrive",
                        (long long)cfg->max_receive_buffer, (long long)cfg->max_message_bytes);
    lms_status st = check_served_names(cfg->served_model_names, err);
    if (st != LMS_OK) return st;
    if (!cfg->tls_cert[0] != !cfg->tls_key[0])
        return lms_fail(err, LMS_ERR_INVALID_ARGUMENT, "bad_flag", "tls-cert",
                        "--tls-cert and --tls-key go together");
    return LMS_OK;
}
