/*
 * log.h — structured logs for the daemon: one record = a message plus
 * key/value fields. Records go to the systemd journal (as journal fields)
 * when stderr is the journal stream (JOURNAL_STREAM set by systemd), and to
 * stderr otherwise, as logfmt text or JSON lines (--log-format). A value
 * keeps its type: numbers are JSON numbers, strings JSON strings.
 *
 *     log_record r;
 *     log_begin(&r, LOG_INFO, "listening");
 *     log_str(&r, "address", addr);
 *     log_int(&r, "port", port);
 *     log_end(&r);
 *
 * Safe to use from any thread; a record lives on the caller's stack.
 */
#ifndef LMSCORED_LOG_H
#define LMSCORED_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <syslog.h>

typedef enum { LOG_FORMAT_TEXT, LOG_FORMAT_JSON } log_format;

#define LOG_MAX_FIELDS 16

typedef struct {
    int priority; /* syslog level: LOG_ERR ... LOG_DEBUG */
    bool enabled; /* false when priority is below the configured level */
    const char *message;
    int n_fields;
    const char *keys[LOG_MAX_FIELDS];
    size_t value_at[LOG_MAX_FIELDS]; /* offsets into values */
    bool is_number[LOG_MAX_FIELDS];  /* written bare in JSON */
    size_t used;
    char values[1536];
} log_record;

/* Called once at startup, before other threads log. */
void log_init(log_format format, int max_priority);
bool log_parse_format(const char *name, log_format *out);
bool log_parse_level(const char *name, int *priority);

void log_begin(log_record *r, int priority, const char *message);
void log_str(log_record *r, const char *key, const char *value);
void log_int(log_record *r, const char *key, int64_t value);
/* A duration of ns nanoseconds as milliseconds, to the microsecond. */
void log_ms(log_record *r, const char *key, int64_t ns);
void log_end(log_record *r);

/* One-line shorthand for a record with no fields. */
void log_msg(int priority, const char *message);

#endif
