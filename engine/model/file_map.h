/*
 * file_map.h — a whole file mapped read-only (MAP_PRIVATE, PROT_READ), for
 * the model file parsers, which serve tensors and strings straight from the
 * mapping instead of copying them.
 */
#ifndef LMS_FILE_MAP_H
#define LMS_FILE_MAP_H

#include <stddef.h>

#include "lmscore.h"

typedef struct {
    const unsigned char *data; /* NULL for an empty file */
    size_t size;
} lms_file_map;

/* A regular file only; an empty one maps to (NULL, 0). */
lms_status lms_file_map_open(const char *path, lms_file_map *map, lms_error *err);
void lms_file_map_close(lms_file_map *map);

/* A reader's parse of a whole file held in memory (its *_open_memory), with
 * out its handle. */
typedef lms_status (*lms_file_parser)(const void *data, size_t size, void *out, lms_error *err);

/* Maps path and parses the mapping: on success *map is the mapping, for the
 * caller to keep as long as what parse made; on failure it is closed and the
 * error names path. */
lms_status lms_file_map_parse(const char *path, lms_file_parser parse, void *out, lms_file_map *map,
                              lms_error *err);

#endif
