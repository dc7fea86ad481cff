/*
 * mhd_log.c — libmicrohttpd's messages as log records (see mhd_log.h).
 */
#include "mhd_log.h"

#include <stdio.h>
#include <string.h>

#include "log.h"

void mhd_log(void *cls, const char *fmt, va_list ap)
{
    char msg[256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n && msg[n - 1] == '\n')
        msg[--n] = '\0';
    log_record r;
    log_begin(&r, LOG_WARNING, cls);
    log_str(&r, "error", msg);
    log_end(&r);
}
