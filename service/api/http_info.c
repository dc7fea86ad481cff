/*
 * http_info.c — GET /health, /v1/models, /openapi.json (see http_info.h).
 * Each call ends OK at once, or with the phase's status (health), and its
 * answer is rendered from what the daemon holds.
 */
#include "http_info.h"

#include <string.h>
#include <time.h>

#include "http_call.h"

/* docs/openapi.json, embedded at build time (service/CMakeLists.txt). */
extern const unsigned char openapi_json[];
extern const unsigned long openapi_json_len;

static void end_ok(call *c)
{
    rpc_status ok;
    rpc_status_ok(&ok);
    call_finish(c, &ok);
}

static void on_health(call *c, const char *body, size_t len)
{
    (void)body, (void)len;
    http_info *h = call_ctx(c);
    rpc_status st;
    switch ((service_phase)atomic_load(&h->svc->phase)) {
    case PHASE_SERVING:
        end_ok(c);
        return;
    case PHASE_LOADING:
        rpc_status_set(&st, GRPC_STATUS_UNAVAILABLE, "not_ready", NULL,
                       "NOT_SERVING: the model is still loading");
        break;
    case PHASE_DRAINING:
        rpc_status_set(&st, GRPC_STATUS_UNAVAILABLE, "draining", NULL,
                       "NOT_SERVING: the server is shutting down");
        break;
    }
    call_finish(c, &st);
}

static void render_health(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    (void)c, (void)reply;
    json_object_open(w);
    json_key(w, "status");
    json_string(w, "SERVING");
    json_object_close(w);
}

/* The model list needs the engine (its name): admitted as a scoring call
 * is, so it is 503 while the model loads. */
static void on_models(call *c, const char *body, size_t len)
{
    (void)body, (void)len;
    http_info *h = call_ctx(c);
    if (http_call_admit(h->svc, c)) end_ok(c);
}

static void model_entry(json_writer *w, const http_info *h, const char *name)
{
    json_object_open(w);
    json_key(w, "id");
    json_string(w, name);
    json_key(w, "object");
    json_string(w, "model");
    json_key(w, "created");
    json_int(w, h->created);
    json_key(w, "owned_by");
    json_string(w, "lmscore");
    json_object_close(w);
}

static void render_models(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    (void)reply;
    const http_info *h = call_ctx(c);
    char name[sizeof h->svc->cfg->served_model_names];
    json_object_open(w);
    json_key(w, "object");
    json_string(w, "list");
    json_key(w, "data");
    json_array_open(w);
    for (size_t i = 0; http_call_served_name(h->svc, i, name, sizeof name); i++)
        model_entry(w, h, name);
    json_array_close(w);
    json_object_close(w);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The ID of "METHOD /v1/models/ID" (GET, or HEAD as a GET), percent-decoded
 * into out; false when it holds a bad escape or decodes to a NUL. */
static bool model_id(const call *c, char *out, size_t size)
{
    static const char prefix[] = "/v1/models/";
    const char *p = strchr(call_method(c), ' ');
    out[0] = '\0';
    if (!p || strncmp(p + 1, prefix, sizeof prefix - 1) != 0) return false;
    p += sizeof prefix;
    size_t n = 0;
    for (; *p && n + 1 < size; p++) {
        int hi, lo;
        if (*p != '%') {
            out[n++] = *p;
        } else if ((hi = hex_digit(p[1])) >= 0 && (lo = hex_digit(p[2])) >= 0 && (hi || lo)) {
            out[n++] = (char)(hi * 16 + lo);
            p += 2;
        } else {
            return false;
        }
    }
    out[n] = '\0';
    return !*p;
}

static void on_model(call *c, const char *body, size_t len)
{
    (void)body, (void)len;
    http_info *h = call_ctx(c);
    if (!http_call_admit(h->svc, c)) return;
    char id[128];
    bool ok = model_id(c, id, sizeof id);
    char *model = ok ? strdup(id) : NULL;
    if (ok && !model) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        return;
    }
    if (!ok) {
        char names[sizeof h->svc->cfg->served_model_names + 3 * CONFIG_MAX_SERVED_NAMES] = "";
        http_call_served_names(h->svc, names, sizeof names);
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_NOT_FOUND, "unknown_model", "model",
                       "model: not a served name; this server serves %s", names);
        call_finish(c, &st);
        return;
    }
    if (http_call_check_model(c, h->svc, model)) end_ok(c);
}

static void render_model(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    (void)reply;
    char id[128];
    model_id(c, id, sizeof id);
    model_entry(w, call_ctx(c), id);
}

static void on_openapi(call *c, const char *body, size_t len)
{
    (void)body, (void)len;
    end_ok(c);
}

static void render_openapi(call *c, const ProtobufCMessage *reply, json_writer *w)
{
    (void)c, (void)reply;
    json_raw(w, (const char *)openapi_json, openapi_json_len);
}

static http_endpoint get(const char *path, const char *metrics_path, bool open, http_info *h,
                         void (*on_body)(call *, const char *, size_t),
                         void (*render)(call *, const ProtobufCMessage *, json_writer *))
{
    return (http_endpoint){
        .path = path,
        .method = "GET",
        .handler = {.path = metrics_path, .shape = CALL_UNARY, .open = open, .ctx = h},
        .on_body = on_body,
        .render = render};
}

void http_info_init(http_info *h, service *svc)
{
    h->svc = svc;
    h->created = (int64_t)time(NULL);
    h->health = get("/health", "/http_info/health", true, h, on_health, render_health);
    h->models = get("/v1/models", "/http_info/models", false, h, on_models, render_models);
    h->model = get("/v1/models/{id}", "/http_info/model", false, h, on_model, render_model);
    h->model.under = true;
    h->openapi = get("/openapi.json", "/http_info/openapi", true, h, on_openapi, render_openapi);
}
