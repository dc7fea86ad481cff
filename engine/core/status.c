/*
 * status.c — filling lms_error. Owns nothing else.
 */
#include "lmscore.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

lms_status lms_fail(lms_error *err, lms_status status, const char *reason, const char *field,
                    const char *fmt, ...)
{
    if (!err) return status;
    err->status = status;
    snprintf(err->reason, sizeof err->reason, "%s", reason ? reason : "");
    snprintf(err->field, sizeof err->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    return status;
}

lms_status lms_fail_context(lms_error *err, const char *fmt, ...)
{
    if (!err) return LMS_ERR_INTERNAL;
    char msg[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (n < 0) return err->status;
    /* msg = "<context>: <old message>", cut to fit */
    size_t used = strlen(msg);
    if (used + 2 < sizeof msg) {
        memcpy(msg + used, ": ", 2);
        used += 2;
        size_t old = strlen(err->msg), room = sizeof msg - 1 - used;
        if (old > room) old = room;
        memcpy(msg + used, err->msg, old);
        msg[used + old] = 0;
    }
    memcpy(err->msg, msg, sizeof msg);
    return err->status;
}

const char *lms_status_name(lms_status status)
{
    switch (status) {
    case LMS_OK:
        return "ok";
    case LMS_ERR_INVALID_ARGUMENT:
        return "invalid_argument";
    case LMS_ERR_RESOURCE_EXHAUSTED:
        return "resource_exhausted";
    case LMS_ERR_IO:
        return "io_error";
    case LMS_ERR_FORMAT:
        return "format_error";
    case LMS_ERR_UNSUPPORTED:
        return "unsupported";
    case LMS_ERR_NOMEM:
        return "out_of_memory";
    case LMS_ERR_CANCELLED:
        return "cancelled";
    case LMS_ERR_INTERNAL:
        return "internal";
    }
    return "unknown";
}
