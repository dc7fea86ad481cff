/*
 * names.h — an enum's values and their names, for the public API's
 * lms_*_name and lms_*_parse functions (a table indexed by value).
 */
#ifndef LMS_NAMES_H
#define LMS_NAMES_H

#include <stdbool.h>
#include <stddef.h>

#define LMS_COUNT_OF(table) (sizeof(table) / sizeof *(table))

/* names[value], or "unknown" outside the table. */
const char *lms_name_of(const char *const *names, size_t count, unsigned value);

/* The value whose name is name, in *value; false when none is. */
bool lms_name_find(const char *const *names, size_t count, const char *name, unsigned *value);

#endif
