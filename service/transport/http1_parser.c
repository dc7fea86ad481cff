/*
 * http1_parser.c — RFC 9112 request heads and chunked bodies, fed
 * incrementally (see http1_parser.h for what is refused and why).
 *
 * The head parser works a line at a time: the lines before p->pos are
 * parsed, the bytes after it up to p->scanned hold no LF, so each call
 * looks at each byte once (the request line's limit is checked on the
 * bytes of a line not yet whole, without a scan). The framing fields
 * (Content-Length, Transfer-Encoding, Host, Connection, Expect) are read
 * once the empty line has come, over every field at once, so that their
 * order does not matter. The chunked decoder is a byte-at-a-time state
 * machine but for the data, which goes to the sink in one piece per call.
 */
#include "http1_parser.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

static http1_result fail(http1_error *err, unsigned status, const char *reason, const char *fmt,
                         ...)
{
    err->status = status;
    err->reason = reason;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    return HTTP1_ERROR;
}

#define MALFORMED "malformed_request"

/* RFC 9110 5.6.2: tchar */
static bool is_tchar(unsigned char c)
{
    if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* RFC 9110 5.5: field-vchar, SP, HTAB (obs-text taken) */
static bool is_value_byte(unsigned char c)
{
    return c == '\t' || (c >= 0x20 && c != 0x7f);
}

/* A target byte: visible ASCII or obs-text, no control byte, space or DEL. */
static bool is_target_byte(unsigned char c)
{
    return c > 0x20 && c != 0x7f;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

static http1_span span(const char *buf, const char *p, size_t len)
{
    return (http1_span){(uint32_t)(p - buf), (uint32_t)len};
}

bool http1_span_is(const char *head, http1_span sp, const char *s)
{
    return strlen(s) == sp.len && strncasecmp(head + sp.off, s, sp.len) == 0;
}

const char *http1_field_value(const http1_request *req, const char *head, const char *name,
                              size_t *len)
{
    for (size_t i = 0; i < req->n_fields; i++)
        if (http1_span_is(head, req->fields[i].name, name)) {
            *len = req->fields[i].value.len;
            return head + req->fields[i].value.off;
        }
    return NULL;
}

void http1_head_init(http1_head_parser *p, http1_request *req)
{
    memset(p, 0, sizeof *p);
    memset(req, 0, sizeof *req);
}

/* The part of a request line not yet whole: a method that is not a token,
 * or a target already past its limit, is refused now rather than when the
 * line ends (which a client may never send). */
static http1_result check_partial_request_line(const char *line, size_t n, const http1_limits *lim,
                                               http1_error *err)
{
    size_t m = 0;
    while (m < n && m <= HTTP1_MAX_METHOD && is_tchar((unsigned char)line[m]))
        m++;
    if (m == n) return HTTP1_MORE;
    if (line[m] != ' ' || m == 0 || m > HTTP1_MAX_METHOD)
        return fail(err, 400, MALFORMED, "the request line does not start with a method");
    const char *end = memchr(line + m + 1, ' ', n - m - 1);
    size_t target = end ? (size_t)(end - line) - m - 1 : n - m - 1;
    if (target > lim->max_target)
        return fail(err, 414, "uri_too_long", "the request target is longer than %zu bytes",
                    lim->max_target);
    /* the version: "HTTP/1.1" and the line's end */
    if (end && (size_t)(line + n - end) > 16)
        return fail(err, 400, MALFORMED, "the request line does not end with an HTTP version");
    return HTTP1_MORE;
}

static bool host_is_valid(const char *v, size_t n);

/* The path of an absolute-form target ("http://host/path?query", RFC 9112
 * 3.2.2: a server must take it as it takes the origin form, the path
 * routed). With no path ("http://host", "http://host?q") it is "/": the
 * second slash of "//". False when target is not one. */
static bool absolute_form_path(const char *target, size_t n, const char **path, size_t *path_len)
{
    size_t scheme = n >= 7 && strncasecmp(target, "http://", 7) == 0    ? 7
                    : n >= 8 && strncasecmp(target, "https://", 8) == 0 ? 8
                                                                        : 0;
    if (!scheme) return false;
    size_t end = scheme;
    while (end < n && target[end] != '/' && target[end] != '?')
        end++;
    if (end == scheme || !host_is_valid(target + scheme, end - scheme)) return false;
    if (end < n && target[end] == '/') {
        *path = target + end;
        *path_len = n - end;
    } else {
        *path = target + scheme - 1;
        *path_len = 1;
    }
    return true;
}

static http1_result parse_request_line(const char *buf, const char *line, size_t n,
                                       const http1_limits *lim, http1_request *req,
                                       http1_error *err)
{
    if (check_partial_request_line(line, n, lim, err) == HTTP1_ERROR) return HTTP1_ERROR;
    const char *sp1 = memchr(line, ' ', n);
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(line + n - sp1 - 1)) : NULL;
    if (!sp1 || !sp2)
        return fail(err, 400, MALFORMED, "the request line is not METHOD TARGET HTTP-VERSION");
    const char *target = sp1 + 1;
    size_t target_len = (size_t)(sp2 - target);
    for (size_t i = 0; i < target_len; i++)
        if (!is_target_byte((unsigned char)target[i]))
            return fail(err, 400, MALFORMED, "the request target holds a control byte");
    const char *path = target;
    size_t path_len = target_len;
    if (target_len == 0 ||
        (target[0] != '/' && !absolute_form_path(target, target_len, &path, &path_len)))
        return fail(err, 400, MALFORMED,
                    "the request target is neither in origin form (a path starting with /) nor "
                    "in absolute form (http://host/path)");
    const char *version = sp2 + 1;
    size_t vlen = (size_t)(line + n - version);
    if (vlen != 8 || memcmp(version, "HTTP/", 5) != 0 || version[5] < '0' || version[5] > '9' ||
        version[6] != '.' || version[7] < '0' || version[7] > '9')
        return fail(err, 400, MALFORMED, "the request line does not end with an HTTP version");
    if (version[5] != '1')
        return fail(err, 505, "http_version_not_supported",
                    "the HTTP version is not served: HTTP/1.x is");
    req->method = span(buf, line, (size_t)(sp1 - line));
    req->target = span(buf, target, target_len);
    const char *query = memchr(path, '?', path_len);
    req->path = span(buf, path, query ? (size_t)(query - path) : path_len);
    /* a later 1.x is served as 1.1, the highest minor this server
     * implements (RFC 9110 2.5) */
    req->minor = version[7] == '0' ? 0 : 1;
    return HTTP1_MORE;
}

/* A field line (RFC 9112 5): name ":" OWS value OWS. The value is checked
 * before anything is taken from it: an Authorization value with a control
 * byte is a wrong key, not one cut short. */
static http1_result parse_field(const char *buf, const char *line, size_t n, http1_field *out,
                                http1_error *err)
{
    if (is_ows(line[0]))
        return fail(err, 400, MALFORMED, "a header field line is folded (obs-fold)");
    size_t name = 0;
    while (name < n && is_tchar((unsigned char)line[name]))
        name++;
    if (name == n || line[name] != ':' || name == 0)
        return fail(err, 400, MALFORMED,
                    "a header field name is not a token followed by a colon (no space before it)");
    const char *v = line + name + 1, *end = line + n;
    while (v < end && is_ows(*v))
        v++;
    while (end > v && is_ows(end[-1]))
        end--;
    for (const char *c = v; c < end; c++) {
        if (is_value_byte((unsigned char)*c)) continue;
        if (name == 13 && strncasecmp(line, "authorization", 13) == 0)
            return fail(err, 401, "invalid_api_key",
                        "the authorization header holds a control byte (NUL, CR, LF, ...)");
        return fail(err, 400, MALFORMED,
                    "a header field value holds a control byte (NUL, CR, LF, ...)");
    }
    out->name = span(buf, line, name);
    out->value = span(buf, v, (size_t)(end - v));
    return HTTP1_MORE;
}

/* Calls each(element) for the elements of a comma-separated list (RFC 9110
 * 5.6.1: empty elements skipped); stops at the first that fails. */
typedef http1_result (*list_fn)(const char *e, size_t n, void *ctx, http1_error *err);

static http1_result each_element(const char *v, size_t n, list_fn fn, void *ctx, http1_error *err)
{
    const char *end = v + n;
    while (v < end) {
        const char *comma = memchr(v, ',', (size_t)(end - v));
        const char *e = v, *e_end = comma ? comma : end;
        while (e < e_end && is_ows(*e))
            e++;
        while (e_end > e && is_ows(e_end[-1]))
            e_end--;
        if (e_end > e && fn(e, (size_t)(e_end - e), ctx, err) == HTTP1_ERROR) return HTTP1_ERROR;
        v = comma ? comma + 1 : end;
    }
    return HTTP1_MORE;
}

static bool element_is(const char *e, size_t n, const char *s)
{
    return strlen(s) == n && strncasecmp(e, s, n) == 0;
}

typedef struct {
    bool chunked_seen;
    bool other;
} codings;

static http1_result read_coding(const char *e, size_t n, void *ctx, http1_error *err)
{
    codings *c = ctx;
    size_t tok = 0;
    while (tok < n && is_tchar((unsigned char)e[tok]))
        tok++;
    if (tok == 0) return fail(err, 400, MALFORMED, "a transfer coding is not a token (RFC 9112)");
    bool chunked = element_is(e, tok, "chunked");
    if (chunked && (c->chunked_seen || tok != n))
        return fail(err, 400, MALFORMED,
                    "chunked is applied twice, or with parameters (RFC 9112 7)");
    if (c->chunked_seen)
        return fail(err, 400, MALFORMED, "chunked is not the final transfer coding (RFC 9112)");
    c->chunked_seen = chunked;
    c->other |= !chunked;
    return HTTP1_MORE;
}

static http1_result read_connection(const char *e, size_t n, void *ctx, http1_error *err)
{
    (void)err;
    int *option = ctx;
    if (element_is(e, n, "close"))
        *option |= 1;
    else if (element_is(e, n, "keep-alive"))
        *option |= 2;
    return HTTP1_MORE;
}

static bool host_is_valid(const char *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!is_target_byte((unsigned char)v[i]) || strchr("/?#@\\", v[i])) return false;
    return true;
}

static http1_result read_length(const char *v, size_t n, http1_request *req, http1_error *err)
{
    if (n == 0 || n > 18)
        return fail(err, 400, MALFORMED, "Content-Length is not a number of at most 18 digits");
    uint64_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] < '0' || v[i] > '9')
            return fail(err, 400, MALFORMED,
                        "Content-Length is not a number (digits only, one value; RFC 9112)");
        len = len * 10 + (uint64_t)(v[i] - '0');
    }
    req->has_length = true;
    req->content_length = len;
    return HTTP1_MORE;
}

/* The head is whole: what its fields say of the framing and the
 * connection. */
static http1_result read_framing(const char *buf, http1_request *req, http1_error *err)
{
    size_t lengths = 0, hosts = 0, encodings = 0;
    codings tc = {0};
    int connection = 0;
    for (size_t i = 0; i < req->n_fields; i++) {
        const http1_field *f = &req->fields[i];
        const char *v = buf + f->value.off;
        if (http1_span_is(buf, f->name, "content-length")) {
            if (lengths++)
                return fail(err, 400, MALFORMED,
                            "the request has several Content-Length headers (RFC 9112)");
            if (read_length(v, f->value.len, req, err) == HTTP1_ERROR) return HTTP1_ERROR;
        } else if (http1_span_is(buf, f->name, "transfer-encoding")) {
            encodings++;
            if (each_element(v, f->value.len, read_coding, &tc, err) == HTTP1_ERROR)
                return HTTP1_ERROR;
        } else if (http1_span_is(buf, f->name, "host")) {
            if (hosts++ || !host_is_valid(v, f->value.len))
                return fail(err, 400, MALFORMED,
                            "the request has several Host headers, or one that is not a host");
        } else if (http1_span_is(buf, f->name, "connection")) {
            each_element(v, f->value.len, read_connection, &connection, err);
        } else if (http1_span_is(buf, f->name, "expect")) {
            req->expect_continue |= req->minor == 1 && element_is(v, f->value.len, "100-continue");
        }
    }
    if (req->minor == 1 && hosts == 0)
        return fail(err, 400, MALFORMED, "an HTTP/1.1 request has no Host header (RFC 9112 3.2)");
    /* the field's presence decides, not its codings: an empty one (",",
     * a tab) is a Transfer-Encoding whose final coding is not chunked,
     * never one that is not there (RFC 9112 6.3) */
    if (encodings && lengths)
        return fail(err, 400, MALFORMED,
                    "the request has both Content-Length and Transfer-Encoding (RFC 9112)");
    if (encodings && req->minor == 0)
        return fail(err, 400, MALFORMED, "an HTTP/1.0 request has a Transfer-Encoding (RFC 9112)");
    if (encodings && !tc.chunked_seen)
        return fail(err, 400, MALFORMED, "chunked is not the final transfer coding (RFC 9112)");
    if (tc.other)
        return fail(err, 501, "unsupported_transfer_coding",
                    "the only transfer coding served is chunked (RFC 9112)");
    req->chunked = tc.chunked_seen;
    req->keep_alive = !(connection & 1) && (req->minor == 1 || (connection & 2));
    return HTTP1_DONE;
}

static http1_result fields_too_large(const http1_limits *lim, http1_error *err)
{
    return fail(err, 431, "headers_too_large",
                "the request's header fields take more than %zu bytes, or are more than %d",
                lim->max_fields_bytes, HTTP1_MAX_FIELDS);
}

http1_result http1_head_feed(http1_head_parser *p, http1_request *req, const char *buf, size_t len,
                             const http1_limits *lim, http1_error *err)
{
    for (;;) {
        size_t from = p->scanned > p->pos ? p->scanned : p->pos;
        const char *lf = from < len ? memchr(buf + from, '\n', len - from) : NULL;
        bool request_line = req->method.len == 0;
        const char *line = buf + p->pos;
        /* the line so far, without its LF: a line not yet whole is checked
         * as far as it goes, and a whole one the same way first, so that
         * bytes get the same refusal whether they come at once or not */
        size_t n = lf ? (size_t)(lf - line) : len - p->pos;
        bool leading_cr = request_line && p->pos == 0 && n == 1 && line[0] == '\r';
        if (request_line && !leading_cr &&
            check_partial_request_line(line, n, lim, err) == HTTP1_ERROR)
            return HTTP1_ERROR;
        if (!request_line && p->field_bytes + n + (lf != NULL) > lim->max_fields_bytes)
            return fields_too_large(lim, err);
        if (!lf) {
            p->scanned = len;
            return HTTP1_MORE;
        }
        if (n == 0 || line[n - 1] != '\r')
            return fail(err, 400, MALFORMED, "a line ends with a bare LF, not CRLF");
        n--;
        if (memchr(line, '\r', n)) return fail(err, 400, MALFORMED, "a line holds a bare CR");
        p->pos = (size_t)(lf - buf) + 1;
        p->scanned = p->pos;
        if (request_line) {
            /* RFC 9112 2.2: one empty line before a request is ignored */
            if (n == 0 && p->pos == 2) continue;
            if (parse_request_line(buf, line, n, lim, req, err) == HTTP1_ERROR) return HTTP1_ERROR;
            continue;
        }
        if (n == 0) {
            req->head_len = p->pos;
            return read_framing(buf, req, err);
        }
        p->field_bytes += n + 2;
        if (req->n_fields == HTTP1_MAX_FIELDS) return fields_too_large(lim, err);
        if (parse_field(buf, line, n, &req->fields[req->n_fields], err) == HTTP1_ERROR)
            return HTTP1_ERROR;
        req->n_fields++;
    }
}

enum {
    C_SIZE,     /* the size's hex digits */
    C_EXT_BWS,  /* after the size: whitespace, then ';' or CR */
    C_EXT,      /* a chunk extension, skipped */
    C_SIZE_LF,  /* the size line's LF */
    C_DATA,     /* the chunk's bytes */
    C_DATA_CR,  /* the CRLF after them */
    C_DATA_LF,  /* */
    C_TRAILER,  /* a trailer field's name, or the empty line's CR */
    C_TVALUE,   /* its value */
    C_TLF,      /* its LF */
    C_END_LF,   /* the empty line's LF: the end */
    C_FINISHED, /* */
};

void http1_chunked_init(http1_chunked *c)
{
    memset(c, 0, sizeof *c);
    c->state = C_SIZE;
}

static int hex_value(unsigned char b)
{
    if (b >= '0' && b <= '9') return b - '0';
    if (b >= 'a' && b <= 'f') return b - 'a' + 10;
    if (b >= 'A' && b <= 'F') return b - 'A' + 10;
    return -1;
}

/* One byte of a size line or a trailer; HTTP1_MORE to go on. */
static http1_result chunked_byte(http1_chunked *c, unsigned char b, const http1_limits *lim,
                                 http1_error *err)
{
    if (c->state <= C_SIZE_LF && ++c->line > HTTP1_MAX_CHUNK_LINE)
        return fail(err, 400, MALFORMED, "a chunk size line is longer than %d bytes",
                    HTTP1_MAX_CHUNK_LINE);
    if (c->state >= C_TRAILER && ++c->trailer_bytes > lim->max_fields_bytes)
        return fail(err, 431, "headers_too_large",
                    "the request's trailer fields take more than %zu bytes", lim->max_fields_bytes);
    int v;
    switch (c->state) {
    case C_SIZE:
        if ((v = hex_value(b)) >= 0) {
            if ((c->size || v) && ++c->digits > 15)
                return fail(err, 400, MALFORMED, "a chunk size is past 2^60 bytes");
            c->size = c->size * 16 + (uint64_t)v;
            return HTTP1_MORE;
        }
        if (c->line == 1) return fail(err, 400, MALFORMED, "a chunk size is not hexadecimal");
        c->state = C_EXT_BWS;
        /* fall through */
    case C_EXT_BWS:
        if (is_ows((char)b)) return HTTP1_MORE;
        if (b == ';')
            c->state = C_EXT;
        else if (b == '\r')
            c->state = C_SIZE_LF;
        else
            return fail(err, 400, MALFORMED, "a chunk size is not hexadecimal");
        return HTTP1_MORE;
    case C_EXT:
        if (b == '\r')
            c->state = C_SIZE_LF;
        else if (!is_value_byte(b))
            return fail(err, 400, MALFORMED, "a chunk extension holds a control byte");
        return HTTP1_MORE;
    case C_SIZE_LF:
        if (b != '\n') return fail(err, 400, MALFORMED, "a chunk size line ends without CRLF");
        c->state = c->size ? C_DATA : C_TRAILER;
        c->line = 0;
        c->line_has_byte = false;
        return HTTP1_MORE;
    case C_DATA_CR:
    case C_DATA_LF:
        if (b != (c->state == C_DATA_CR ? '\r' : '\n'))
            return fail(err, 400, MALFORMED, "a chunk's data is not followed by CRLF");
        if (c->state == C_DATA_LF) {
            c->state = C_SIZE;
            c->digits = 0;
            c->line = 0;
        } else {
            c->state = C_DATA_LF;
        }
        return HTTP1_MORE;
    case C_TRAILER:
        if (b == '\r' && !c->line_has_byte) {
            c->state = C_END_LF;
        } else if (b == ':' && c->line_has_byte) {
            c->state = C_TVALUE;
        } else if (!is_tchar(b)) {
            return fail(err, 400, MALFORMED, "a trailer field name is not a token");
        }
        c->line_has_byte = true;
        return HTTP1_MORE;
    case C_TVALUE:
        if (b == '\r')
            c->state = C_TLF;
        else if (!is_value_byte(b))
            return fail(err, 400, MALFORMED, "a trailer field value holds a control byte");
        return HTTP1_MORE;
    case C_TLF:
    case C_END_LF:
        if (b != '\n') return fail(err, 400, MALFORMED, "a trailer line ends without CRLF");
        if (c->state == C_END_LF) {
            c->state = C_FINISHED;
            return HTTP1_DONE;
        }
        if (++c->trailers > HTTP1_MAX_FIELDS)
            return fail(err, 431, "headers_too_large", "the request has more than %d trailers",
                        HTTP1_MAX_FIELDS);
        c->state = C_TRAILER;
        c->line_has_byte = false;
        return HTTP1_MORE;
    default:
        return fail(err, 400, MALFORMED, "bytes after the chunked body's end");
    }
}

http1_result http1_chunked_feed(http1_chunked *c, const char *in, size_t len, size_t *used,
                                const http1_limits *lim,
                                void (*sink)(void *ctx, const char *data, size_t n), void *ctx,
                                http1_error *err)
{
    size_t i = 0;
    while (i < len) {
        if (c->state == C_DATA) {
            size_t n = len - i < c->size ? len - i : (size_t)c->size;
            sink(ctx, in + i, n);
            c->size -= n;
            i += n;
            if (!c->size) c->state = C_DATA_CR;
            continue;
        }
        http1_result r = chunked_byte(c, (unsigned char)in[i++], lim, err);
        if (r != HTTP1_MORE) {
            *used = i;
            return r;
        }
    }
    *used = i;
    return HTTP1_MORE;
}
