/*
 * descriptors.c — the reflection descriptor pool (see descriptors.h).
 */
#include "descriptors.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "google/protobuf/descriptor.pb-c.h"

extern const unsigned char served_protoset[];
extern const unsigned long served_protoset_len;

typedef struct {
    char *name;
    int file;
} symbol;

typedef struct {
    uint8_t *bytes;
    size_t len;
} file_bytes;

struct descriptor_pool {
    Google__Protobuf__FileDescriptorSet *set;
    file_bytes *files;
    symbol *symbols;
    size_t n_symbols, cap_symbols;
    char **services;
    size_t n_services;
    bool oom;
};

static void add_symbol(descriptor_pool *p, const char *scope, const char *name, int file)
{
    if (p->oom) return;
    if (p->n_symbols == p->cap_symbols) {
        size_t cap = p->cap_symbols ? p->cap_symbols * 2 : 256;
        symbol *grown = realloc(p->symbols, cap * sizeof *grown);
        if (!grown) {
            p->oom = true;
            return;
        }
        p->symbols = grown;
        p->cap_symbols = cap;
    }
    size_t len = strlen(scope) + strlen(name) + 2;
    char *full = malloc(len);
    if (!full) {
        p->oom = true;
        return;
    }
    snprintf(full, len, "%s%s%s", scope, scope[0] ? "." : "", name);
    p->symbols[p->n_symbols++] = (symbol){full, file};
}

/* Enum values are scoped as siblings of their enum (protobuf's C++ rule). */
static void add_enum(descriptor_pool *p, const char *scope,
                     const Google__Protobuf__EnumDescriptorProto *e, int file)
{
    add_symbol(p, scope, e->name, file);
    for (size_t i = 0; i < e->n_value; i++)
        add_symbol(p, scope, e->value[i]->name, file);
}

static void add_message(descriptor_pool *p, const char *scope,
                        const Google__Protobuf__DescriptorProto *m, int file)
{
    add_symbol(p, scope, m->name, file);
    if (p->oom) return;
    const char *full = p->symbols[p->n_symbols - 1].name;
    for (size_t i = 0; i < m->n_field; i++)
        add_symbol(p, full, m->field[i]->name, file);
    for (size_t i = 0; i < m->n_nested_type; i++)
        add_message(p, full, m->nested_type[i], file);
    for (size_t i = 0; i < m->n_enum_type; i++)
        add_enum(p, full, m->enum_type[i], file);
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const symbol *)a)->name, ((const symbol *)b)->name);
}

static lms_status index_file(descriptor_pool *p, int f)
{
    const Google__Protobuf__FileDescriptorProto *fd = p->set->file[f];
    const char *pkg = fd->package ? fd->package : "";
    for (size_t i = 0; i < fd->n_message_type; i++)
        add_message(p, pkg, fd->message_type[i], f);
    for (size_t i = 0; i < fd->n_enum_type; i++)
        add_enum(p, pkg, fd->enum_type[i], f);
    for (size_t i = 0; i < fd->n_extension; i++)
        add_symbol(p, pkg, fd->extension[i]->name, f);
    for (size_t i = 0; i < fd->n_service; i++) {
        const Google__Protobuf__ServiceDescriptorProto *svc = fd->service[i];
        add_symbol(p, pkg, svc->name, f);
        if (p->oom) return LMS_ERR_NOMEM;
        const char *full = p->symbols[p->n_symbols - 1].name;
        char **grown = realloc(p->services, (p->n_services + 1) * sizeof *grown);
        if (!grown) return LMS_ERR_NOMEM;
        p->services = grown;
        p->services[p->n_services++] = (char *)full; /* owned by the symbol table */
        for (size_t m = 0; m < svc->n_method; m++)
            add_symbol(p, full, svc->method[m]->name, f);
    }
    if (p->oom) return LMS_ERR_NOMEM;
    size_t len = google__protobuf__file_descriptor_proto__get_packed_size(fd);
    p->files[f].bytes = malloc(len ? len : 1);
    if (!p->files[f].bytes) return LMS_ERR_NOMEM;
    p->files[f].len = google__protobuf__file_descriptor_proto__pack(fd, p->files[f].bytes);
    return LMS_OK;
}

lms_status descriptor_pool_load(const uint8_t *set, size_t len, descriptor_pool **out,
                                lms_error *err)
{
    descriptor_pool *p = calloc(1, sizeof *p);
    if (!p) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "out of memory");
    p->set = google__protobuf__file_descriptor_set__unpack(NULL, len, set);
    if (!p->set) {
        free(p);
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "the descriptor set does not parse");
    }
    p->files = calloc(p->set->n_file ? p->set->n_file : 1, sizeof *p->files);
    lms_status st = p->files ? LMS_OK : LMS_ERR_NOMEM;
    for (size_t f = 0; st == LMS_OK && f < p->set->n_file; f++)
        st = index_file(p, (int)f);
    if (st != LMS_OK) {
        descriptor_pool_free(p);
        return lms_fail(err, st, NULL, NULL, "out of memory indexing the descriptor set");
    }
    qsort(p->symbols, p->n_symbols, sizeof *p->symbols, by_name);
    *out = p;
    return LMS_OK;
}

lms_status descriptor_pool_load_served(descriptor_pool **out, lms_error *err)
{
    return descriptor_pool_load(served_protoset, served_protoset_len, out, err);
}

void descriptor_pool_free(descriptor_pool *p)
{
    for (size_t i = 0; i < p->n_symbols; i++)
        free(p->symbols[i].name);
    free(p->symbols);
    free(p->services);
    if (p->files)
        for (size_t f = 0; f < p->set->n_file; f++)
            free(p->files[f].bytes);
    free(p->files);
    google__protobuf__file_descriptor_set__free_unpacked(p->set, NULL);
    free(p);
}

size_t descriptor_pool_n_services(const descriptor_pool *p)
{
    return p->n_services;
}

const char *descriptor_pool_service(const descriptor_pool *p, size_t i)
{
    return p->services[i];
}

size_t descriptor_pool_n_files(const descriptor_pool *p)
{
    return p->set->n_file;
}

int descriptor_pool_file_by_name(const descriptor_pool *p, const char *name)
{
    for (size_t f = 0; f < p->set->n_file; f++)
        if (strcmp(p->set->file[f]->name, name) == 0) return (int)f;
    return -1;
}

int descriptor_pool_file_by_symbol(const descriptor_pool *p, const char *name)
{
    symbol key = {(char *)name, 0};
    const symbol *s = bsearch(&key, p->symbols, p->n_symbols, sizeof *p->symbols, by_name);
    return s ? s->file : -1;
}

size_t descriptor_pool_with_deps(const descriptor_pool *p, int file, int *out)
{
    size_t n = 0;
    out[n++] = file;
    /* out doubles as the work list: each file's dependencies are appended
     * unless already there */
    for (size_t i = 0; i < n; i++) {
        const Google__Protobuf__FileDescriptorProto *fd = p->set->file[out[i]];
        for (size_t d = 0; d < fd->n_dependency; d++) {
            int dep = descriptor_pool_file_by_name(p, fd->dependency[d]);
            bool seen = dep < 0;
            for (size_t k = 0; k < n && !seen; k++)
                seen = out[k] == dep;
            if (!seen) out[n++] = dep;
        }
    }
    return n;
}

const uint8_t *descriptor_pool_file_bytes(const descriptor_pool *p, int file, size_t *len)
{
    *len = p->files[file].len;
    return p->files[file].bytes;
}
