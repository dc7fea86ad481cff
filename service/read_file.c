/*
 * read_file.c — small files read whole (see read_file.h).
 */
#include "read_file.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

char *read_file(const char *path, const char *flag, size_t max_bytes, size_t *len, lms_error *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        lms_fail(err, LMS_ERR_IO, NULL, flag, "--%s %s: cannot open it", flag, path);
        return NULL;
    }
    char *buf = NULL;
    size_t used = 0, cap = 0;
    for (;;) {
        if (used + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 16384;
            char *grown = realloc(buf, cap);
            if (!grown) {
                free(buf);
                fclose(f);
                lms_fail(err, LMS_ERR_NOMEM, NULL, flag, "out of memory reading %s", path);
                return NULL;
            }
            buf = grown;
        }
        size_t n = fread(buf + used, 1, 4096, f);
        used += n;
        if (n < 4096 || used > max_bytes) break;
    }
    bool failed = ferror(f);
    fclose(f);
    if (failed || used > max_bytes) {
        free(buf);
        if (failed)
            lms_fail(err, LMS_ERR_IO, NULL, flag, "--%s %s: cannot read it", flag, path);
        else
            lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, flag, "--%s %s: larger than %zu bytes",
                     flag, path, max_bytes);
        return NULL;
    }
    buf[used] = '\0';
    if (len) *len = used;
    return buf;
}
