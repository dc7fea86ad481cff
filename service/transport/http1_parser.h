/*
 * http1_parser.h — HTTP/1.1 request framing (RFC 9112), as pure functions
 * over bytes: a request's head (request line and header fields) and a
 * chunked body, each fed incrementally as bytes arrive, with no I/O, no
 * allocation and no threads. What they refuse, and why:
 *
 *   - the request line: a method token, one space, an origin-form target
 *     ("/..."; bytes 0x80-0xFF are taken, so that a path that is not
 *     UTF-8 reaches the router and its log escaped; control bytes, space
 *     and DEL are not) or an absolute-form one ("http://host/...", whose
 *     path is routed: RFC 9112 3.2.2), one space, HTTP/1.x (a minor
 *     version past 1 is taken as 1.1: RFC 9110 2.5); another HTTP/x.y is
 *     505, anything else 400; a target past max_target bytes is 414 (as
 *     soon as it is that long);
 *   - header fields: a token name with no whitespace before the colon, no
 *     obs-fold (a line starting with a space), a value of visible bytes,
 *     spaces, tabs and obs-text: NUL, CR, LF and other control bytes are
 *     refused (a value is never cut); the lines past max_fields_bytes, or
 *     more than HTTP1_MAX_FIELDS of them, are 431. A control byte in an
 *     Authorization value is 401 invalid_api_key (the key is wrong),
 *     elsewhere 400;
 *   - lines end with CRLF; a bare CR or LF is 400 (RFC 9112 2.2 lets a
 *     recipient take a bare LF: this one does not, so that no two readers
 *     of the same bytes see different lines);
 *   - framing (6.1, 6.3): Content-Length of digits only, once (a second
 *     one, even equal, or a list is 400); Transfer-Encoding with chunked
 *     the final coding and once, else 400; another coding before it (gzip,
 *     chunked) is 501, one not understood; Content-Length beside
 *     Transfer-Encoding, or Transfer-Encoding on HTTP/1.0, is 400. The
 *     caller closes the connection after any of these errors;
 *   - Host (3.2): required on HTTP/1.1, at most once, no whitespace, '/',
 *     '?', '#', '@' or control byte in it, else 400;
 *   - Connection: "close" ends the connection after the answer;
 *     "keep-alive" keeps an HTTP/1.0 one (1.1 keeps it unless told);
 *     Expect: 100-continue is noted (another expectation is ignored, as
 *     RFC 9110 10.1.1 allows).
 *
 * Chunked bodies (7.1): hex sizes, at most 15 significant digits (a size
 * past 2^60 is 400, never wrapped); chunk extensions are tolerated and
 * skipped (7.1.1 says to ignore those not understood), but their bytes
 * are checked (no control byte but tab) and the size line with them is at
 * most HTTP1_MAX_CHUNK_LINE bytes; the data's CRLF is required; trailer
 * fields are checked as header fields and dropped, within
 * max_fields_bytes.
 *
 * Every refusal is an http1_error: the HTTP status, the reason of the
 * documented error body (malformed_request, uri_too_long,
 * headers_too_large, http_version_not_supported,
 * unsupported_transfer_coding, invalid_api_key) and a message that names
 * no byte of the client's.
 */
#ifndef LMSCORED_HTTP1_PARSER_H
#define LMSCORED_HTTP1_PARSER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HTTP1_MAX_FIELDS     128
#define HTTP1_MAX_METHOD     32
#define HTTP1_MAX_CHUNK_LINE 1024

typedef struct {
    unsigned status;    /* 400, 401, 414, 431, 501, 505 */
    const char *reason; /* the ErrorInfo reason */
    char message[160];
} http1_error;

/* Bytes of the head, by offset from its first byte, so that the head can
 * be copied or moved. */
typedef struct {
    uint32_t off, len;
} http1_span;

typedef struct {
    http1_span name, value; /* the value without its surrounding whitespace */
} http1_field;

typedef struct {
    size_t max_target;       /* the request target, path and query */
    size_t max_fields_bytes; /* the field lines, CRLFs included (trailers too) */
} http1_limits;

/* A request head, filled by http1_head_feed. */
typedef struct {
    http1_span method, target, path; /* path: the target's path, up to '?' */
    int minor;                       /* HTTP/1.minor: 0 or 1 */
    http1_field fields[HTTP1_MAX_FIELDS];
    size_t n_fields;
    bool chunked;
    bool has_length;
    uint64_t content_length;
    bool keep_alive;      /* the connection may carry another request after this one */
    bool expect_continue; /* Expect: 100-continue */
    size_t head_len;      /* bytes of the head, its empty line included */
} http1_request;

typedef enum { HTTP1_MORE, HTTP1_DONE, HTTP1_ERROR } http1_result;

/* The state of a head being read. */
typedef struct {
    size_t pos;         /* the bytes before pos are whole lines, parsed */
    size_t scanned;     /* no LF before scanned after pos */
    size_t field_bytes; /* of the field lines parsed */
    size_t hosts;
} http1_head_parser;

void http1_head_init(http1_head_parser *p, http1_request *req);
/* buf[0..len) is every byte of the connection from the head's first one
 * (the same bytes, more of them, on each call). HTTP1_DONE: req is whole,
 * req->head_len bytes of buf its head (any byte after it is the body, or
 * the next request). HTTP1_MORE: no fault so far, the head is not whole.
 * HTTP1_ERROR: err says why; nothing more is to be read on the
 * connection. */
http1_result http1_head_feed(http1_head_parser *p, http1_request *req, const char *buf, size_t len,
                             const http1_limits *lim, http1_error *err);

/* The value of the first field called name (case-insensitive), NULL if
 * none; *len its length (values hold no NUL, but are not terminated). */
const char *http1_field_value(const http1_request *req, const char *head, const char *name,
                              size_t *len);
/* Whether a span of head equals s, case-insensitively. */
bool http1_span_is(const char *head, http1_span sp, const char *s);

/* A chunked body being read. */
typedef struct {
    int state;
    uint64_t size; /* of the chunk being read: left to read */
    size_t line;   /* bytes of the size line or trailer line so far */
    size_t digits; /* significant hex digits of the size */
    size_t trailer_bytes;
    size_t trailers;
    bool line_has_byte; /* the trailer line has a byte (not the empty line) */
} http1_chunked;

void http1_chunked_init(http1_chunked *c);
/* Decodes in[0..len): the data bytes go to sink (in pieces, in order);
 * *used is how many bytes of in were taken. HTTP1_DONE: the body ended
 * (its last chunk and trailers read) at in + *used; HTTP1_MORE: every byte
 * taken, more needed; HTTP1_ERROR: err says why. */
http1_result http1_chunked_feed(http1_chunked *c, const char *in, size_t len, size_t *used,
                                const http1_limits *lim,
                                void (*sink)(void *ctx, const char *data, size_t n), void *ctx,
                                http1_error *err);

#endif
