/*
 * request_context.c — request ids and W3C trace context (see
 * request_context.h). traceparent is read as Trace Context Level 1 says:
 * version-trace_id-parent_id-flags in lowercase hex; version ff, an
 * all-zero trace or parent id, and a version 00 value of any length but 55
 * are invalid; a later version is read by its first four fields when the
 * value goes on with a dash after them.
 */
#include "request_context.h"

#include <stdlib.h>
#include <string.h>

#define TRACEPARENT_V00_LEN 55 /* 2 + 1 + 32 + 1 + 16 + 1 + 2 */
#define PARENT_ID_HEX_LEN   16

static bool is_lower_hex(char ch)
{
    return (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f');
}

/* n lowercase hex digits at s, not all of them zero when nonzero is set. */
static bool lower_hex(const char *s, size_t n, bool nonzero)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!is_lower_hex(s[i])) return false;
        any |= s[i] != '0';
    }
    return any || !nonzero;
}

bool traceparent_trace_id(const char *value, size_t len, char trace_id[TRACE_ID_HEX_LEN + 1])
{
    const char *v = value;
    if (!v || len < TRACEPARENT_V00_LEN) return false;
    if (!lower_hex(v, 2, false) || (v[0] == 'f' && v[1] == 'f')) return false;
    bool v00 = v[0] == '0' && v[1] == '0';
    if (v00 ? len != TRACEPARENT_V00_LEN : len > TRACEPARENT_V00_LEN && v[55] != '-') return false;
    const char *trace = v + 3, *parent = trace + TRACE_ID_HEX_LEN + 1;
    const char *flags = parent + PARENT_ID_HEX_LEN + 1;
    if (v[2] != '-' || parent[-1] != '-' || flags[-1] != '-') return false;
    if (!lower_hex(trace, TRACE_ID_HEX_LEN, true) || !lower_hex(parent, PARENT_ID_HEX_LEN, true) ||
        !lower_hex(flags, 2, false))
        return false;
    memcpy(trace_id, trace, TRACE_ID_HEX_LEN);
    trace_id[TRACE_ID_HEX_LEN] = '\0';
    return true;
}

/* 1 to REQUEST_ID_MAX_LEN characters in 0x21-0x7e: what a metadata value
 * and a log line carry unchanged. */
static bool usable_request_id(const char *s, size_t len)
{
    if (!s || len == 0 || len > REQUEST_ID_MAX_LEN) return false;
    for (size_t i = 0; i < len; i++)
        if (s[i] < 0x21 || s[i] > 0x7e) return false;
    return true;
}

static void make_request_id(char out[REQUEST_ID_MAX_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char bytes[16];
    arc4random_buf(bytes, sizeof bytes);
    for (size_t i = 0; i < sizeof bytes; i++) {
        out[2 * i] = hex[bytes[i] >> 4];
        out[2 * i + 1] = hex[bytes[i] & 15];
    }
    out[2 * sizeof bytes] = '\0';
}

void request_context_init(request_context *ctx, const char *request_id, size_t request_id_len,
                          const char *traceparent, size_t traceparent_len)
{
    if (usable_request_id(request_id, request_id_len)) {
        memcpy(ctx->request_id, request_id, request_id_len);
        ctx->request_id[request_id_len] = '\0';
    } else {
        make_request_id(ctx->request_id);
    }
    if (!traceparent_trace_id(traceparent, traceparent_len, ctx->trace_id)) ctx->trace_id[0] = '\0';
}

void request_context_log(log_record *r, const request_context *ctx)
{
    log_str(r, "request_id", ctx->request_id);
    if (ctx->trace_id[0]) log_str(r, "trace_id", ctx->trace_id);
}
