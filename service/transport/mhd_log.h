/*
 * mhd_log.h — libmicrohttpd's error messages into the daemon's log, for
 * both of its HTTP servers (the listener of /metrics, and the HTTP API).
 */
#ifndef LMSCORED_MHD_LOG_H
#define LMSCORED_MHD_LOG_H

#include <stdarg.h>

/* MHD_OPTION_EXTERNAL_LOGGER's callback; cls is the log message naming
 * the server (e.g. "HTTP server"), the formatted text its error field. */
void mhd_log(void *cls, const char *fmt, va_list ap);

#endif
