/*
 * status.c — filling lms_error. Owns nothing else.
 */
#include "status.h"

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
    char prefix[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof prefix - 2) {
        char old[sizeof err->msg];
        memcpy(old, err->msg, sizeof old);
        snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old);
    }
    return err->status;
}

const char *lms_status_name(lms_status status)
{
    switch (status) {
    case LMS_OK: return "ok";
    case LMS_ERR_INVALID_ARGUMENT: return "invalid_argument";
    case LMS_ERR_RESOURCE_EXHAUSTED: return "resource_exhausted";
    case LMS_ERR_IO: return "io_error";
    case LMS_ERR_FORMAT: return "format_error";
    case LMS_ERR_UNSUPPORTED: return "unsupported";
    case LMS_ERR_NOMEM: return "out_of_memory";
    case LMS_ERR_CANCELLED: return "cancelled";
    case LMS_ERR_INTERNAL: return "internal";
    }
    return "unknown";
}
