/*
 * reflection.c — ServerReflectionInfo: one response per request, in order.
 * The next request is read only after the previous response has left, so
 * a stream holds one message at a time. v1alpha is wire-identical to v1
 * (same messages, same field numbers), so the v1 messages serve both.
 */
#include "reflection.h"

#include <stdlib.h>

#include "grpc/reflection/v1/reflection.pb-c.h"

static void answer(call *c, Grpc__Reflection__V1__ServerReflectionRequest *req)
{
    const descriptor_pool *pool = call_ctx(c);
    Grpc__Reflection__V1__ServerReflectionResponse resp =
        GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__INIT;
    resp.valid_host = req->host;
    resp.original_request = req;

    Grpc__Reflection__V1__ErrorResponse error = GRPC__REFLECTION__V1__ERROR_RESPONSE__INIT;
    Grpc__Reflection__V1__FileDescriptorResponse files =
        GRPC__REFLECTION__V1__FILE_DESCRIPTOR_RESPONSE__INIT;
    Grpc__Reflection__V1__ListServiceResponse list =
        GRPC__REFLECTION__V1__LIST_SERVICE_RESPONSE__INIT;
    Grpc__Reflection__V1__ExtensionNumberResponse extensions =
        GRPC__REFLECTION__V1__EXTENSION_NUMBER_RESPONSE__INIT;
    size_t n_files = descriptor_pool_n_files(pool);
    size_t n_services = descriptor_pool_n_services(pool);
    int *file_ids = calloc(n_files, sizeof *file_ids);
    ProtobufCBinaryData *blobs = calloc(n_files, sizeof *blobs);
    Grpc__Reflection__V1__ServiceResponse *services = calloc(n_services, sizeof *services);
    Grpc__Reflection__V1__ServiceResponse **service_ptrs = calloc(n_services, sizeof *service_ptrs);
    if (!file_ids || !blobs || !services || !service_ptrs) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_RESOURCE_EXHAUSTED, NULL, NULL, "out of memory");
        call_finish(c, &st);
        goto done;
    }

    int file = -1;
    const char *missing = NULL;
    switch (req->message_request_case) {
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_LIST_SERVICES:
        for (size_t i = 0; i < n_services; i++) {
            grpc__reflection__v1__service_response__init(&services[i]);
            services[i].name = (char *)descriptor_pool_service(pool, i);
            service_ptrs[i] = &services[i];
        }
        list.n_service = n_services;
        list.service = service_ptrs;
        resp.message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_LIST_SERVICES_RESPONSE;
        resp.list_services_response = &list;
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_BY_FILENAME:
        file = descriptor_pool_file_by_name(pool, req->file_by_filename);
        missing = req->file_by_filename;
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_SYMBOL:
        file = descriptor_pool_file_by_symbol(pool, req->file_containing_symbol);
        missing = req->file_containing_symbol;
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_ALL_EXTENSION_NUMBERS_OF_TYPE:
        /* no served message declares extension ranges with extensions */
        file = descriptor_pool_file_by_symbol(pool, req->all_extension_numbers_of_type);
        if (file >= 0) {
            extensions.base_type_name = req->all_extension_numbers_of_type;
            resp.message_response_case =
                GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ALL_EXTENSION_NUMBERS_RESPONSE;
            resp.all_extension_numbers_response = &extensions;
            file = -1;
        } else {
            missing = req->all_extension_numbers_of_type;
        }
        break;
    case GRPC__REFLECTION__V1__SERVER_REFLECTION_REQUEST__MESSAGE_REQUEST_FILE_CONTAINING_EXTENSION:
        missing = "extension";
        break;
    default:
        error.error_code = GRPC_STATUS_UNIMPLEMENTED;
        error.error_message = "unknown reflection request";
        resp.message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
        resp.error_response = &error;
        break;
    }
    if (file >= 0) {
        size_t n = descriptor_pool_with_deps(pool, file, file_ids);
        for (size_t i = 0; i < n; i++)
            blobs[i].data = (uint8_t *)descriptor_pool_file_bytes(pool, file_ids[i], &blobs[i].len);
        files.n_file_descriptor_proto = n;
        files.file_descriptor_proto = blobs;
        resp.message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_FILE_DESCRIPTOR_RESPONSE;
        resp.file_descriptor_response = &files;
    } else if (missing &&
               resp.message_response_case ==
                   GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE__NOT_SET) {
        error.error_code = GRPC_STATUS_NOT_FOUND;
        error.error_message = "not found";
        resp.message_response_case =
            GRPC__REFLECTION__V1__SERVER_REFLECTION_RESPONSE__MESSAGE_RESPONSE_ERROR_RESPONSE;
        resp.error_response = &error;
    }
    if (call_send(c, &resp.base) != CALL_SENT) {
        rpc_status st;
        rpc_status_set(&st, GRPC_STATUS_INTERNAL, NULL, NULL, "reflection response not sent");
        call_finish(c, &st);
    }
done:
    free(file_ids);
    free(blobs);
    free(services);
    free(service_ptrs);
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
