/*
 * descriptors.h — the descriptor pool behind server reflection: the
 * FileDescriptorSet of every served proto (embedded at build time by
 * protoc --descriptor_set_out --include_imports), indexed by file name and
 * by fully-qualified symbol (services, methods, messages, fields, enums,
 * enum values).
 */
#ifndef LMSCORED_DESCRIPTORS_H
#define LMSCORED_DESCRIPTORS_H

#include <stddef.h>
#include <stdint.h>

#include "lmscore.h"

typedef struct descriptor_pool descriptor_pool;

/* The set compiled into the daemon. */
lms_status descriptor_pool_load_served(descriptor_pool **out, lms_error *err);
lms_status descriptor_pool_load(const uint8_t *set, size_t len, descriptor_pool **out,
                                lms_error *err);
void descriptor_pool_free(descriptor_pool *p);

size_t descriptor_pool_n_services(const descriptor_pool *p);
const char *descriptor_pool_service(const descriptor_pool *p, size_t i); /* full name */

/* A file's index, or -1. */
int descriptor_pool_file_by_name(const descriptor_pool *p, const char *name);
int descriptor_pool_file_by_symbol(const descriptor_pool *p, const char *symbol);
/* Writes file and its transitive dependencies (each once, file first) to
 * out, which has room for every file of the pool; returns how many. */
size_t descriptor_pool_with_deps(const descriptor_pool *p, int file, int *out);
/* The serialized FileDescriptorProto of a file. */
const uint8_t *descriptor_pool_file_bytes(const descriptor_pool *p, int file, size_t *len);
size_t descriptor_pool_n_files(const descriptor_pool *p);

#endif
