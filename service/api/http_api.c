/*
 * http_api.c — the HTTP API's pieces put together (see http_api.h).
 */
#include "http_api.h"

#include <stdlib.h>

#include "http_info.h"
#include "http_rerank.h"
#include "http_score.h"
#include "http_server.h"
#include "log.h"

struct http_api {
    const lmscored_config *cfg;
    const api_keys *keys;
    const rerank_profile *profile;
    http_score score;
    http_rerank rerank[3]; /* by rerank_dialect */
    http_info info;
    const http_endpoint *endpoints[HTTP_API_ENDPOINTS];
    http_server *server;
};

lms_status http_api_create(const lmscored_config *cfg, service *svc, const api_keys *keys,
                           const rerank_profile *profile, http_api **out, lms_error *err)
{
    http_api *a = calloc(1, sizeof *a);
    if (!a) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    a->profile = profile;
    a->cfg = cfg;
    a->keys = keys;
    http_score_init(&a->score, svc);
    http_info_init(&a->info, svc);
    size_t n = 0;
    a->endpoints[n++] = &a->score.endpoint;
    for (rerank_dialect d = RERANK_COHERE; d <= RERANK_TEI; d++) {
        http_rerank_init(&a->rerank[d], svc, a->profile, d);
        a->endpoints[n++] = &a->rerank[d].endpoint;
    }
    a->endpoints[n++] = &a->info.health;
    a->endpoints[n++] = &a->info.models;
    a->endpoints[n++] = &a->info.model;
    a->endpoints[n++] = &a->info.openapi;
    *out = a;
    return LMS_OK;
}

const call_handler *http_api_handler(const http_api *a, size_t i)
{
    return &a->endpoints[i]->handler;
}

lms_status http_api_start(http_api *a, lms_error *err)
{
    const lmscored_config *cfg = a->cfg;
    http_options opt = {.listen = cfg->http_listen,
                        .tls_cert = cfg->tls_cert,
                        .tls_key = cfg->tls_key,
                        .max_body_bytes = cfg->max_message_bytes,
                        .max_receive_buffer = cfg->max_receive_buffer,
                        .max_connections = cfg->http_max_connections,
                        .max_per_peer = cfg->http_max_connections_per_peer,
                        .header_timeout_ms = cfg->http_header_timeout_ms,
                        .body_min_rate = cfg->http_body_min_rate,
                        .keys = a->keys,
                        .cors_origins = cfg->http_cors_allow_origin,
                        .endpoints = a->endpoints,
                        .n_endpoints = HTTP_API_ENDPOINTS};
    lms_status st = http_server_start(&opt, &a->server, err);
    if (st != LMS_OK) return st;
    log_record r;
    log_begin(&r, LOG_INFO, "HTTP listening");
    log_str(&r, "address", cfg->http_listen);
    log_int(&r, "port", http_server_port(a->server));
    log_str(&r, "tls", cfg->tls_cert[0] ? "on" : "off");
    log_str(&r, "rerank_profile", a->profile->name);
    log_end(&r);
    return LMS_OK;
}

void http_api_stop(http_api *a)
{
    if (!a) return;
    http_server_stop(a->server);
    a->server = NULL;
}

void http_api_free(http_api *a)
{
    if (!a) return;
    http_api_stop(a);
    free(a);
}
