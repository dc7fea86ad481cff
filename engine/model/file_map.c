/*
 * file_map.c — mapping a model file read-only (see file_map.h).
 */
#include "file_map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

lms_status lms_file_map_open(const char *path, lms_file_map *map, lms_error *err)
{
    map->data = NULL;
    map->size = 0;
    /* O_NONBLOCK: opening a FIFO would wait for a writer; anything but a
     * regular file is refused below. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: not a regular file", path);
    }
    if ((uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: too large to map", path);
    }
    if (st.st_size == 0) {
        close(fd);
        return LMS_OK;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd); /* the mapping keeps the file referenced */
    if (p == MAP_FAILED)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: mmap: %s", path, strerror(e));
    map->data = p;
    map->size = (size_t)st.st_size;
    return LMS_OK;
}

lms_status lms_file_map_parse(const char *path, lms_file_parser parse, void *out, lms_file_map *map,
                              lms_error *err)
{
    lms_status st = lms_file_map_open(path, map, err);
    if (st != LMS_OK) return st;
    st = parse(map->data, map->size, out, err);
    if (st != LMS_OK) {
        lms_file_map_close(map);
        lms_fail_context(err, "%s", path);
    }
    return st;
}

void lms_file_map_close(lms_file_map *map)
{
    if (map->data) munmap((void *)map->data, map->size);
    map->data = NULL;
    map->size = 0;
}
