/*
 * reflection.c — ServerReflectionInfo: one response per request, in order.
 * The next request is read only after the previous response has left, so
 * a stream holds one message at a time. v1alpha is wire-identical to v1
 * (same messages, same field numbers), so the v1 messages serve both.
 */
#include "reflection.h"

#include <stdlib.h>

#include "grpc/reflection/v1/reflection.pb-c.h"

/* A response being built: the message, the parts it points to and the
 * arrays they hold (sized for the pool's files and services). */
typedef struct {
    Grpc__Reflection__V1__ServerReflectionResponse resp;
    Grpc__Reflection__V1__ErrorResponse error;
    Grpc__Reflection__V1__FileDescriptorResponse files;
    Grpc__Reflection__V1__ListServiceResponse list;
    Grpc__Reflection__V1__ExtensionNumberResponse extensions;
    int *file_ids;
    ProtobufCBinaryData *blobs;
    Grpc__Reflection__V1__ServiceResponse *services;
    Grpc__Reflection__V1__ServiceResponse **service_ptrs;
} reply;

/* False when out of memory (reply_free frees what was made). */
static bool reply_init(reply *r, const descriptor_pool *pool,
                       Grpc__Reflection__V1__ServerReflectionRequest *req)
{
    *r = (reply){.resp = GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT,
                 .error = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT,
                 .files = GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT,
                 .list = GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT,
                 .extensions = GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT};
    r->resp.valid_host = req->host;
    r->resp.original_request = req;
    size_t n_files = descriptor_pool_n_files(pool);
    size_t n_services = descriptor_pool_n_services(pool);
    r->file_ids = calloc(n_files, sizeof *r->file_ids);
    r->blobs = calloc(n_files, sizeof *r->blobs);
    r->services = calloc(n_services, sizeof *r->services);
    r->service_ptrs = calloc(n_services, sizeof *r->service_ptrs);
    return r->file_ids && r->blobs && r->services && r->service_ptrs;
}

static void reply_free(reply *r)
{
    free(r->file_ids);
    free(r->blobs);
    free(r->services);
    free(r->service_ptrs);
}

static void answer_error(reply *r, grpc_status_code code, const char *message)
{
    r->error.error_code = code;
    r->error.error_message = (char *)message;
    r->resp.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
    r->resp.error_response = &r->error;
}

static void answer_services(reply *r, const descriptor_pool *pool)
{
    size_t n_services = descriptor_pool_n_services(pool);
    for (size_t i = 0; i < n_services; i++) {
        grpc__reflection__v1__service_response__init(&r->services[i]);
        r->services[i].name = (char *)descriptor_pool_service(pool, i);
        r->service_ptrs[i] = &r->services[i];
    }
    r->list.n_service = n_services;
    r->list.service = r->service_ptrs;
    r->resp.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
    r->resp.list_services_response = &r->list;
}

/* file (a pool index) with its transitive dependencies; NOT_FOUND for -1. */
static void answer_file(reply *r, const descriptor_pool *pool, int file)
{
    if (file < 0) {
        answer_error(r, GRPC_STATUS_NOT_FOUND, "not found");
        return;
    }
    size_t n = descriptor_pool_with_deps(pool, file, r->file_ids);
    for (size_t i = 0; i < n; i++)
        r->blobs[i].data =
            (uint8_t *)descriptor_pool_file_bytes(pool, r->file_ids[i], &r->blobs[i].len);
    r->files.n_file_descriptor_proto = n;
    r->files.file_descriptor_proto = r->blobs;
    r->resp.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
    r->resp.file_descriptor_response = &r->files;
}

/* No served message declares extension ranges with extensions: a known
 * type has none, an unknown one is NOT_FOUND. */
static void answer_extensions(reply *r, const descriptor_pool *pool, char *type)
{
    if (descriptor_pool_file_by_symbol(pool, type) < 0) {
        answer_error(r, GRPC_STATUS_NOT_FOUND, "not found");
        return;
    }
    r->extensions.base_type_name = type;
    r->resp.message_response_case =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
    r->resp.all_extension_numbers_response = &r->extensions;
}

static void answer(call *c, Grpc__Reflection__V1__ServerReflectionRequest *req)
{
    const descriptor_pool *pool = call_ctx(c);
    reply r;
    rpc_status st;
    if (!reply_init(&r, pool, req)) {
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        reply_free(&r);
        return;
    }
    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        answer_services(&r, pool);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        answer_file(&r, pool, descriptor_pool_file_by_name(pool, req->file_by_filename));
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        answer_file(&r, pool, descriptor_pool_file_by_symbol(pool, req->file_containing_symbol));
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        answer_extensions(&r, pool, req->all_extension_numbers_of_type);
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        answer_file(&r, pool, -1); /* no served file declares an extension */
        break;
    default:
        answer_error(&r, GRPC_STATUS_UNIMPLEMENTED, "unknown reflection request");
        break;
    }
    if (call_send(c, &r.resp.base) != CALL_SENT) {
        rpc_status_set(&st, GRPC_STATUS_INTERNAL, NULL, NULL, "reflection response not sent");
        call_finish(c, &st);
    }
    reply_free(&r);
}

static void on_message(call *c, const uint8_t *msg, size_t len)
{
    if (!msg) { /* the client is done asking */
        rpc_status ok;
        rpc_status_ok(&ok);
        call_finish(c, &ok);
        return;
    }
    Grpc__Reflection__V1__ServerReflectionRequest *req =
        (Grpc__Reflection__V1__ServerReflectionRequest *)call_unpack(
            c, &grpc__reflection__v1__server_reflection_request__descriptor, msg, len);
    if (!req) return;
    answer(c, req);
    grpc__reflection__v1__server_reflection_request__free_unpacked(req, NULL);
}

/* The response left: read the next request. */
static void on_sent(call *c)
{
    call_request_next(c);
}

void reflection_init(reflection_handlers *h, const descriptor_pool *pool)
{
    h->v1 = (call_handler){.path = "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
                           .shape = CALL_BIDI_STREAMING,
                           .ctx = (void *)pool,
                           .on_message = on_message,
                           .on_sent = on_sent};
    h->v1alpha = h->v1;
    h->v1alpha.path = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
}
