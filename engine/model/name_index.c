/*
 * name_index.c — sorted name -> id index (see name_index.h).
 */
#include "name_index.h"

#include <stdlib.h>
#include <string.h>

bool name_index_init(name_index *ix, size_t n)
{
    ix->n = n;
    ix->entries = NULL;
    if (n == 0) return true;
    ix->entries = calloc(n, sizeof *ix->entries);
    return ix->entries != NULL;
}

void name_index_set(name_index *ix, size_t i, const char *ptr, size_t len)
{
    ix->entries[i] = (name_index_entry){ptr, len, i};
}

static int compare_names(const char *a, size_t a_len, const char *b, size_t b_len)
{
    int c = memcmp(a, b, a_len < b_len ? a_len : b_len);
    if (c != 0) return c;
    return (a_len > b_len) - (a_len < b_len);
}

static int compare_entries(const void *a, const void *b)
{
    const name_index_entry *x = a, *y = b;
    return compare_names(x->ptr, x->len, y->ptr, y->len);
}

bool name_index_sort(name_index *ix, size_t *dup_id)
{
    if (ix->n < 2) return true;
    qsort(ix->entries, ix->n, sizeof *ix->entries, compare_entries);
    for (size_t i = 1; i < ix->n; i++) {
        if (compare_entries(&ix->entries[i - 1], &ix->entries[i]) == 0) {
            *dup_id = ix->entries[i].id;
            return false;
        }
    }
    return true;
}

bool name_index_find(const name_index *ix, const char *ptr, size_t len, size_t *id)
{
    size_t lo = 0, hi = ix->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const name_index_entry *e = &ix->entries[mid];
        int c = compare_names(ptr, len, e->ptr, e->len);
        if (c == 0) {
            *id = e->id;
            return true;
        }
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return false;
}

void name_index_free(name_index *ix)
{
    free(ix->entries);
    ix->entries = NULL;
    ix->n = 0;
}
