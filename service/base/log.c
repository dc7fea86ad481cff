/*
 * log.c — structured log records to the journal, or to stderr as logfmt or
 * JSON lines. See log.h.
 */
#include "log.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define SD_JOURNAL_SUPPRESS_LOCATION
#include <systemd/sd-journal.h>

#include "utf8.h"

static log_format g_format = LOG_FORMAT_TEXT;
static int g_max_priority = LOG_INFO;
static bool g_journal;
static pthread_mutex_t g_stderr_lock = PTHREAD_MUTEX_INITIALIZER;

static const char *const level_names[] = {"emerg", "alert",  "crit", "error",
                                          "warn",  "notice", "info", "debug"};

/* systemd sets JOURNAL_STREAM=dev:inode for a service whose stderr is the
 * journal; it only counts when stderr is still that stream (a child may
 * have redirected it). */
static bool stderr_is_journal(void)
{
    const char *js = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    if (!js || sscanf(js, "%llu:%llu", &dev, &ino) != 2 || fstat(2, &st) != 0) return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(log_format format, int max_priority)
{
    g_format = format;
    g_max_priority = max_priority;
    g_journal = stderr_is_journal();
}

bool log_parse_format(const char *name, log_format *out)
{
    if (strcmp(name, "text") == 0)
        *out = LOG_FORMAT_TEXT;
    else if (strcmp(name, "json") == 0)
        *out = LOG_FORMAT_JSON;
    else
        return false;
    return true;
}

bool log_parse_level(const char *name, int *priority)
{
    for (int p = LOG_ERR; p <= LOG_DEBUG; p++) {
        if (strcmp(name, level_names[p]) == 0) {
            *priority = p;
            return true;
        }
    }
    return false;
}

void log_begin(log_record *r, int priority, const char *message)
{
    r->priority = priority;
    r->enabled = priority <= g_max_priority;
    r->message = message;
    r->n_fields = 0;
    r->used = 0;
}

static void add_field(log_record *r, const char *key, bool is_number, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void add_field(log_record *r, const char *key, bool is_number, const char *fmt, ...)
{
    if (!r->enabled || r->n_fields == LOG_MAX_FIELDS) return;
    size_t room = sizeof r->values - r->used;
    if (room < 2) return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(r->values + r->used, room, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    /* a number cut short would no longer be the number: leave it out */
    if (is_number && (size_t)n >= room) return;
    r->keys[r->n_fields] = key;
    r->value_at[r->n_fields] = r->used;
    r->is_number[r->n_fields] = is_number;
    r->n_fields++;
    r->used += (size_t)n < room ? (size_t)n + 1 : room;
}

void log_str(log_record *r, const char *key, const char *value)
{
    add_field(r, key, false, "%s", value ? value : "");
}

void log_int(log_record *r, const char *key, int64_t value)
{
    add_field(r, key, true, "%lld", (long long)value);
}

void log_ms(log_record *r, const char *key, int64_t ns)
{
    /* integer arithmetic: exact, and never a NaN or an exponent in JSON */
    const char *sign = ns < 0 ? "-" : "";
    uint64_t us = (ns < 0 ? 0 - (uint64_t)ns : (uint64_t)ns) / 1000;
    add_field(r, key, true, "%s%llu.%03llu", sign, (unsigned long long)(us / 1000),
              (unsigned long long)(us % 1000));
}

/* A line under construction. Each record is written with one write(2): an
 * unbuffered stderr would otherwise cost a system call per character, and
 * a line written in pieces can interleave with another process's output. */
typedef struct {
    char buf[12 * 1024]; /* values escape to at most 6x their 1,536 bytes */
    size_t len;
} line_buf;

static void line_put(line_buf *l, const char *s, size_t n)
{
    size_t room = sizeof l->buf - 1 - l->len; /* the last byte is kept for '\n' */
    if (n > room) n = room;
    memcpy(l->buf + l->len, s, n);
    l->len += n;
}

static void line_puts(line_buf *l, const char *s)
{
    line_put(l, s, strlen(s));
}

/* Appends s escaped for a JSON string or a logfmt value. A byte that is
 * not part of well-formed UTF-8 (a client's path, say) is written as the
 * four characters \xHH (in JSON, with the backslash escaped), so that every
 * line is valid UTF-8 and the byte can still be read off it. */
static void line_put_escaped(line_buf *l, const char *s, bool json)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t left = strlen(s);
    while (left) {
        unsigned char ch = *p;
        char esc[8];
        size_t seq = utf8_sequence_len(p, left);
        if (seq > 1) {
            /* whole or not at all: a sequence cut by the line's end would not be UTF-8 */
            if (seq < sizeof l->buf - l->len) line_put(l, (const char *)p, seq);
        } else if (seq == 0) {
            snprintf(esc, sizeof esc, json ? "\\\\x%02x" : "\\x%02x", ch);
            line_puts(l, esc);
            seq = 1;
        } else if (ch == '"' || ch == '\\') {
            esc[0] = '\\';
            esc[1] = (char)ch;
            line_put(l, esc, 2);
        } else if (ch == '\n') {
            line_puts(l, "\\n");
        } else if (ch < 0x20 || ch == 0x7f) {
            snprintf(esc, sizeof esc, json ? "\\u%04x" : "\\x%02x", ch);
            line_puts(l, esc);
        } else {
            line_put(l, (const char *)&ch, 1);
        }
        p += seq;
        left -= seq;
    }
}

static bool needs_quotes(const char *s)
{
    if (!*s) return true;
    for (; *s; s++)
        if (*s == ' ' || *s == '"' || *s == '=' || *s == '\\' || (unsigned char)*s < 0x20 ||
            (unsigned char)*s >= 0x7f)
            return true;
    return false;
}

static void line_format(line_buf *l, const log_record *r)
{
    struct timespec ts;
    struct tm tm;
    char when[40];
    clock_gettime(CLOCK_REALTIME, &ts);
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1000000);

    bool json = g_format == LOG_FORMAT_JSON;
    line_puts(l, json ? "{\"ts\":\"" : "ts=");
    line_puts(l, when);
    line_puts(l, json ? "\",\"level\":\"" : " level=");
    line_puts(l, level_names[r->priority]);
    line_puts(l, json ? "\",\"msg\":\"" : " msg=\"");
    line_put_escaped(l, r->message, json);
    line_puts(l, "\"");
    for (int i = 0; i < r->n_fields; i++) {
        const char *v = r->values + r->value_at[i];
        bool quote = json ? !r->is_number[i] : needs_quotes(v);
        line_puts(l, json ? ",\"" : " ");
        line_puts(l, r->keys[i]);
        line_puts(l, json ? "\":" : "=");
        if (quote) line_puts(l, "\"");
        line_put_escaped(l, v, json);
        if (quote) line_puts(l, "\"");
    }
    if (json) line_puts(l, "}");
    l->buf[l->len++] = '\n';
}

static void write_stderr(const log_record *r)
{
    line_buf l;
    l.len = 0;
    line_format(&l, r);
    pthread_mutex_lock(&g_stderr_lock);
    for (size_t off = 0; off < l.len;) {
        ssize_t n = write(STDERR_FILENO, l.buf + off, l.len - off);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break; /* stderr is gone: nowhere to say so */
        off += (size_t)n;
    }
    pthread_mutex_unlock(&g_stderr_lock);
}

/* Journal field names are upper case letters, digits and underscores. */
static void journal_key(char *dst, size_t cap, const char *key)
{
    size_t i = 0;
    for (; key[i] && i + 1 < cap; i++)
        dst[i] = isalnum((unsigned char)key[i]) ? (char)toupper((unsigned char)key[i]) : '_';
    dst[i] = '\0';
}

static void write_journal(const log_record *r)
{
    struct iovec iov[LOG_MAX_FIELDS + 3];
    char lines[LOG_MAX_FIELDS + 3][1600];
    int n = 0;
    snprintf(lines[n], sizeof lines[n], "MESSAGE=%s", r->message);
    snprintf(lines[++n], sizeof lines[n], "PRIORITY=%d", r->priority);
    snprintf(lines[++n], sizeof lines[n], "SYSLOG_IDENTIFIER=lmscored");
    for (int i = 0; i < r->n_fields; i++) {
        char key[64];
        journal_key(key, sizeof key, r->keys[i]);
        snprintf(lines[++n], sizeof lines[n], "%s=%s", key, r->values + r->value_at[i]);
    }
    n++;
    for (int i = 0; i < n; i++) {
        iov[i].iov_base = lines[i];
        iov[i].iov_len = strlen(lines[i]);
    }
    if (sd_journal_sendv(iov, n) < 0) write_stderr(r);
}

void log_end(log_record *r)
{
    if (!r->enabled) return;
    if (g_journal)
        write_journal(r);
    else
        write_stderr(r);
}

void log_msg(int priority, const char *message)
{
    log_record r;
    log_begin(&r, priority, message);
    log_end(&r);
}
