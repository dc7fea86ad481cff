/*
 * out.c — atomic output files (see mm_out.h).
 */
#include "mm_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

lms_status mm_out_open(mm_out *out, const char *path, lms_error *err)
{
    memset(out, 0, sizeof *out);
    const size_t n = strlen(path);
    out->path = malloc(n + 1);
    out->tmp_path = malloc(n + 5);
    if (!out->path || !out->tmp_path) {
        free(out->path);
        free(out->tmp_path);
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "no memory for a path");
    }
    memcpy(out->path, path, n + 1);
    memcpy(out->tmp_path, path, n);
    memcpy(out->tmp_path + n, ".tmp", 5);
    out->file = fopen(out->tmp_path, "wb");
    if (!out->file) {
        lms_status st = lms_fail(err, LMS_ERR_IO, NULL, NULL, "cannot create %s: %s", out->tmp_path,
                                 strerror(errno));
        free(out->path);
        free(out->tmp_path);
        return st;
    }
    /* Large sequential writes: a big stdio buffer keeps syscalls few. */
    setvbuf(out->file, NULL, _IOFBF, 1 << 20);
    return LMS_OK;
}

void mm_out_write(mm_out *out, const void *data, size_t n)
{
    if (out->error || n == 0) return;
    if (fwrite(data, 1, n, out->file) != n) out->error = errno ? errno : EIO;
    out->offset += n;
}

void mm_out_pad(mm_out *out, uint64_t alignment)
{
    static const uint8_t zeros[64];
    uint64_t pad = (alignment - out->offset % alignment) % alignment;
    while (pad > 0) {
        size_t chunk = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        mm_out_write(out, zeros, chunk);
        pad -= chunk;
    }
}

static void release(mm_out *out)
{
    free(out->path);
    free(out->tmp_path);
    out->path = out->tmp_path = NULL;
    out->file = NULL;
}

lms_status mm_out_commit(mm_out *out, lms_error *err)
{
    if (fflush(out->file) != 0 && !out->error) out->error = errno;
    if (fclose(out->file) != 0 && !out->error) out->error = errno;
    if (!out->error && rename(out->tmp_path, out->path) != 0) out->error = errno;
    lms_status st = LMS_OK;
    if (out->error) {
        st = lms_fail(err, LMS_ERR_IO, NULL, NULL, "writing %s: %s", out->path,
                      strerror(out->error));
        remove(out->tmp_path);
    }
    release(out);
    return st;
}

void mm_out_abort(mm_out *out)
{
    if (!out->file) return;
    fclose(out->file);
    remove(out->tmp_path);
    release(out);
}
