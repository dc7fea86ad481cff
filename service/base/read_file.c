/*
 * read_file.c — small files read whole (see read_file.h).
 */
#include "read_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *read_file(const char *path, const char *flag, size_t max_bytes, size_t *len, lms_error *err)
{
    /* O_NONBLOCK: opening a FIFO would wait for a writer, deaf to signals
     * before the daemon listens; anything but a regular file is refused. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        int e = errno;
        if (fd >= 0) close(fd);
        lms_fail(err, LMS_ERR_IO, NULL, flag, "--%s %s: %s", flag, path, strerror(e));
        return NULL;
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, flag, "--%s %s: not a regular file", flag,
                 path);
        return NULL;
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, flag, "--%s %s: larger than %zu bytes", flag,
                 path, max_bytes);
        return NULL;
    }
    /* read to the end, not to st_size: the file may change meanwhile */
    size_t cap = (size_t)st.st_size + 1, used = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) {
            close(fd);
            lms_fail(err, LMS_ERR_NOMEM, NULL, flag, "out of memory reading %s", path);
            return NULL;
        }
        ssize_t n = read(fd, buf + used, cap - used);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            int e = errno;
            close(fd);
            free(buf);
            lms_fail(err, LMS_ERR_IO, NULL, flag, "--%s %s: %s", flag, path, strerror(e));
            return NULL;
        }
        if (n == 0) break;
        used += (size_t)n;
        if (used > max_bytes) {
            close(fd);
            free(buf);
            lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, flag, "--%s %s: larger than %zu bytes",
                     flag, path, max_bytes);
            return NULL;
        }
        if (used == cap) {
            cap *= 2;
            char *grown = realloc(buf, cap + 1);
            if (!grown) free(buf);
            buf = grown;
        }
    }
    close(fd);
    buf[used] = '\0';
    if (len) *len = used;
    return buf;
}
