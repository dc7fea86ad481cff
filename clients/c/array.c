/*
 * array.c — geometric growth for the CLI's arrays.
 */
#include "array.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

bool array_push(void **items, size_t *count, size_t *cap, size_t elem_size, const void *elem)
{
    if (*count == *cap) {
        size_t grown = *cap ? *cap * 2 : 16;
        if (grown > SIZE_MAX / elem_size) return false;
        void *bigger = realloc(*items, grown * elem_size);
        if (!bigger) return false;
        *items = bigger;
        *cap = grown;
    }
    memcpy((char *)*items + *count * elem_size, elem, elem_size);
    (*count)++;
    return true;
}
