/*
 * http_call.c — the HTTP endpoints' common steps (see http_call.h).
 */
#include "http_call.h"

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

bool http_call_check_model(call *c, const lms_engine *e, char *model)
{
    lms_model_info mi;
    lms_engine_model_info(e, &mi);
    bool served = !model || strcmp(model, mi.name) == 0;
    if (!served) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_NOT_FOUND, "unknown_model", "model",
                       "model: this server serves \"%s\", not \"%.64s\" (or leave model out)",
                       mi.name, model);
        call_finish(c, &st);
    }
    free(model);
    return served;
}

void http_call_model(json_writer *w, const lms_engine *e)
{
    lms_model_info mi;
    lms_engine_model_info(e, &mi);
    json_key(w, "model");
    json_string(w, mi.name);
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
