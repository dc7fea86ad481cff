/*
 * names.c — an enum's values and their names (see names.h).
 */
#include "names.h"

#include <string.h>

const char *lms_name_of(const char *const *names, size_t count, unsigned value)
{
    return value < count && names[value] ? names[value] : "unknown";
}

bool lms_name_find(const char *const *names, size_t count, const char *name, unsigned *value)
{
    for (size_t i = 0; i < count; i++)
        if (names[i] && strcmp(name, names[i]) == 0) {
            *value = (unsigned)i;
            return true;
        }
    return false;
}
