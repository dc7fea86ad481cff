/*
 * array.h — the growable arrays of the CLI (token ids, inputs, latencies).
 */
#ifndef LMSCORE_CLI_ARRAY_H
#define LMSCORE_CLI_ARRAY_H

#include <stdbool.h>
#include <stddef.h>

/* Appends elem (elem_size bytes) to the array *items holding *count elements
 * in room for *cap, growing it geometrically; false when out of memory (the
 * array is then unchanged). */
bool array_push(void **items, size_t *count, size_t *cap, size_t elem_size, const void *elem);

#endif
