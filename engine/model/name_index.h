/*
 * name_index.h — a sorted index from names (byte strings, not necessarily
 * NUL-terminated) to ids, for the file parsers: O(log n) lookup by name and
 * duplicate detection at build time.
 */
#ifndef LMS_NAME_INDEX_H
#define LMS_NAME_INDEX_H

#include <stdbool.h>
#include <stddef.h>

typedef struct {
    const char *ptr;
    size_t len;
    size_t id;
} name_index_entry;

typedef struct {
    name_index_entry *entries; /* sorted by name after name_index_sort */
    size_t n;
} name_index;

/* Room for n names; false when the allocation fails. */
bool name_index_init(name_index *ix, size_t n);
/* Entry i gets id i; the name must outlive the index. */
void name_index_set(name_index *ix, size_t i, const char *ptr, size_t len);
/* Sorts; false when two entries share a name, with *dup_id one of their ids. */
bool name_index_sort(name_index *ix, size_t *dup_id);
bool name_index_find(const name_index *ix, const char *ptr, size_t len, size_t *id);
void name_index_free(name_index *ix);

#endif
