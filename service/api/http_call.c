/*
 * http_call.c — the HTTP endpoints' common steps (see http_call.h).
 */
#include "http_call.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

lms_engine *http_call_admit(service *svc, call *c)
{
    rpc_status st;
    lms_engine *engine = service_admit(svc, c, &st);
    if (!engine) call_finish(c, &st);
    return engine;
}

void http_call_budget(const service *svc, decode_budget *b)
{
    decode_budget_init(b, decode_budget_limit(svc->cfg->max_message_bytes));
}

void http_call_fail(call *c, const lms_error *err)
{
    rpc_status st;
    rpc_status_from_error(&st, err);
    call_finish(c, &st);
}

bool http_call_served_name(const service *svc, size_t i, char *name, size_t size)
{
    const char *p = svc->cfg->served_model_names;
    if (!p[0]) {
        lms_model_info mi;
        lms_engine_model_info(svc->engine, &mi);
        snprintf(name, size, "%s", mi.name);
        return i == 0;
    }
    for (; i > 0; i--) {
        p = strchr(p, ',');
        if (!p++) return false;
    }
    snprintf(name, size, "%.*s", (int)strcspn(p, ","), p);
    return true;
}

void http_call_served_names(const service *svc, char *out, size_t size)
{
    char name[sizeof svc->cfg->served_model_names];
    size_t n = 0;
    out[0] = '\0';
    for (size_t i = 0; n < size && http_call_served_name(svc, i, name, sizeof name); i++)
        n += (size_t)snprintf(out + n, size - n, "%s\"%s\"", i ? ", " : "", name);
}

bool http_call_check_model(call *c, const service *svc, char *model)
{
    char name[sizeof svc->cfg->served_model_names];
    bool served = !model;
    for (size_t i = 0; !served && http_call_served_name(svc, i, name, sizeof name); i++)
        served = strcmp(model, name) == 0;
    if (!served) {
        char names[sizeof svc->cfg->served_model_names + 3 * CONFIG_MAX_SERVED_NAMES] = "";
        http_call_served_names(svc, names, sizeof names);
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_NOT_FOUND, "unknown_model", "model",
                       "model: \"%.64s\" is not served; this server serves %s (or leave model out)",
                       model, names);
        call_finish(c, &st);
    }
    free(model);
    return served;
}

void http_call_model(json_writer *w, const service *svc)
{
    char name[sizeof svc->cfg->served_model_names];
    http_call_served_name(svc, 0, name, sizeof name);
    json_key(w, "model");
    json_string(w, name);
}

void http_call_usage(json_writer *w, const Lmscore__V1__Usage *u)
{
    json_key(w, "usage");
    json_object_open(w);
    json_key(w, "prompt_tokens");
    json_int(w, u ? u->prompt_tokens : 0);
    json_key(w, "completion_tokens");
    json_int(w, 0);
    json_key(w, "total_tokens");
    json_int(w, u ? u->prompt_tokens : 0);
    json_key(w, "computed_tokens");
    json_int(w, u ? u->computed_tokens : 0);
    json_key(w, "cached_tokens");
    json_int(w, u ? u->cached_tokens : 0);
    json_object_close(w);
}
