/*
 * reflection.h — gRPC server reflection, grpc.reflection.v1 and
 * grpc.reflection.v1alpha ServerReflectionInfo: list_services,
 * file_by_filename, file_containing_symbol (with transitive dependencies),
 * all_extension_numbers_of_type, over the embedded descriptor pool. So
 * grpc_cli and grpcurl work with no proto files.
 */
#ifndef LMSCORED_REFLECTION_H
#define LMSCORED_REFLECTION_H

#include "call.h"
#include "descriptors.h"

typedef struct {
    call_handler v1;
    call_handler v1alpha;
} reflection_handlers;

void reflection_init(reflection_handlers *h, const descriptor_pool *pool);

#endif
