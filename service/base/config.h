/*
 * config.h — the daemon's configuration: command-line flags, each with an
 * LMSCORE_* environment variable as its default (flags win).
 */
#ifndef LMSCORED_CONFIG_H
#define LMSCORED_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"
#include "log.h"

typedef struct {
    char model_path[4096];
    char listen[256];
    char metrics_listen[256]; /* empty: no metrics endpoint */
    char http_listen[256];    /* empty: no HTTP API */
    int http_max_connections;
    int http_max_connections_per_peer;
    int64_t http_header_timeout_ms;
    int64_t http_body_min_rate; /* bytes a second */
    /* ORIGIN[,ORIGIN...] or "*": the browser origins the HTTP API answers
     * with CORS headers; empty: none (no CORS) */
    char http_cors_allow_origin[1024];
    char rerank_profile[4096]; /* empty: the default */
    bool truncate_documents;   /* rerank documents cut when the request does not say */
    /* NAME[,NAME...]: the names the HTTP API's "model" may carry, the first
     * one answered; empty: the model file's name */
    char served_model_names[1024];
    char tls_cert[4096]; /* both or neither */
    char tls_key[4096];
    char api_key_file[4096]; /* empty: no API keys, every call is served */
    int workers;
    int threads; /* engine threads in all; 0: OMP_NUM_THREADS, else the CPUs available */
    int queue_depth;
    int64_t max_message_bytes;
    int64_t max_receive_buffer; /* 0 until config_parse picks the default */
    int32_t max_items;
    int32_t max_sequence_tokens; /* 0: the model's context length */
    int64_t max_text_bytes;      /* longest text before it is tokenized */
    lms_algorithm algorithm;
    lms_precision precision;
    lms_kv_dtype kv_dtype;
    char isa[32];      /* a compute tier, or "auto" */
    int32_t delimiter; /* -1: none */
    int32_t max_packed_tokens;
    size_t prefix_cache_bytes;
    int64_t drain_timeout_ms;
    int64_t max_connection_idle_ms; /* 0: never */
    int64_t max_connection_age_ms;  /* 0: never */
    int64_t max_connection_age_grace_ms;
    int64_t keepalive_time_ms;
    int64_t keepalive_min_time_ms;
    log_format log_format;
    int log_level;
} lmscored_config;

/* Most names --served-model-name takes. */
#define CONFIG_MAX_SERVED_NAMES 16

typedef enum {
    CONFIG_RUN,  /* start the daemon */
    CONFIG_EXIT, /* --help or --version was printed: exit 0 */
} config_outcome;

/* Parses argv over the environment. On a bad flag or value, returns
 * LMS_ERR_INVALID_ARGUMENT with err->field naming the flag. */
lms_status config_parse(int argc, char **argv, lmscored_config *cfg, config_outcome *outcome,
                        lms_error *err);

#endif
