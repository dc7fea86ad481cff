/*
 * http_call.h — what every HTTP endpoint does around the shared path:
 * admission (as a gRPC call is admitted), the decoding budget of its body,
 * the request's "model" against the names served (--served-model-name),
 * and the parts every answer has (the model's name, the usage).
 */
#ifndef LMSCORED_HTTP_CALL_H
#define LMSCORED_HTTP_CALL_H

#include <stdbool.h>

#include "call.h"
#include "decode_budget.h"
#include "json_writer.h"
#include "lmscore/v1/score.pb-c.h"
#include "service.h"

/* service_admit; NULL when the call has been ended instead (not_ready,
 * draining). */
lms_engine *http_call_admit(service *svc, call *c);
/* The decoding budget of a body, the same as a gRPC message's. */
void http_call_budget(const service *svc, decode_budget *b);
/* Ends c with err's status. */
void http_call_fail(call *c, const lms_error *err);
/* The i-th name the model is served under (--served-model-name, else the
 * model file's name), NUL-terminated in name; false past the last. */
bool http_call_served_name(const service *svc, size_t i, char *name, size_t size);
/* Every served name, quoted and comma-separated ("a", "b"), cut to size. */
void http_call_served_names(const service *svc, char *out, size_t size);
/* True when model (the request's, NULL when it named none; freed here) is
 * one of the served names; else c ends NOT_FOUND (reason unknown_model),
 * as OpenAI-style servers answer a model they do not serve. */
bool http_call_check_model(call *c, const service *svc, char *model);
/* "model": the first served name. */
void http_call_model(json_writer *w, const service *svc);
/* "usage": the seeds' prompt/completion/total tokens, and lmscore's
 * computed and cached tokens (Usage's names). */
void http_call_usage(json_writer *w, const Lmscore__V1__Usage *u);

#endif
