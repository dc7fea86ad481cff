/*
 * model_load.c — lms_model_load: a directory is a Hugging Face checkpoint,
 * anything else a GGUF file. The dispatch sits above the format front-ends
 * (model_formats.h), which sit above the binder they share (model_bind.h).
 */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "model.h"
#include "model_bind.h"
#include "model_formats.h"

lms_status lms_model_load(const char *path, const lms_stop *stop, lms_model **out, lms_error *err)
{
    *out = NULL;
    struct stat st_buf;
    if (stat(path, &st_buf) != 0)
        return lms_fail(err, LMS_ERR_IO, NULL, NULL, "%s: %s", path, strerror(errno));
    /* A FIFO, a device or a socket would block or stream its reader. */
    if (!S_ISREG(st_buf.st_mode) && !S_ISDIR(st_buf.st_mode))
        return lms_fail(err, LMS_ERR_IO, NULL, NULL,
                        "%s: not a regular file (a GGUF model) or a directory (a Hugging Face "
                        "model)",
                        path);
    lms_model *model;
    lms_status st = lms_model_create(&model, err);
    if (st != LMS_OK) return st;
    st = S_ISDIR(st_buf.st_mode) ? lms_model_load_hf(model, path, stop, err)
                                 : lms_model_load_gguf(model, path, stop, err);
    if (st != LMS_OK) {
        lms_model_free(model);
        return st;
    }
    *out = model;
    return LMS_OK;
}
