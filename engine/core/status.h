/*
 * status.h — the engine's error model.
 *
 * Every fallible engine function returns an lms_status and, on failure, fills
 * the caller's lms_error (which may be NULL when the caller does not care).
 * The message is for people; `reason` is a stable machine-readable token
 * (e.g. "token_id_exceeds_vocab") that the service maps onto
 * google.rpc.ErrorInfo, and `field` names the request field at fault.
 */
#ifndef LMS_STATUS_H
#define LMS_STATUS_H

typedef enum {
    LMS_OK = 0,
    LMS_ERR_INVALID_ARGUMENT,   /* the request is malformed: see reason/field */
    LMS_ERR_RESOURCE_EXHAUSTED, /* a configured limit or the memory budget */
    LMS_ERR_IO,                 /* open/read/mmap failed */
    LMS_ERR_FORMAT,             /* a model or tokenizer file is malformed */
    LMS_ERR_UNSUPPORTED,        /* well-formed but not something we run */
    LMS_ERR_NOMEM,              /* an allocation failed */
    LMS_ERR_CANCELLED,          /* the caller asked us to stop */
    LMS_ERR_INTERNAL,           /* a bug: an invariant did not hold */
} lms_status;

typedef struct {
    lms_status status;
    char reason[48];
    char field[48];
    char msg[400];
} lms_error;

/* Fills err (if non-NULL) and returns status, so callers can write
 * `return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL, "bad magic %x", m);` */
lms_status lms_fail(lms_error *err, lms_status status, const char *reason, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* Prepends "context: " to an error already filled by a callee. */
lms_status lms_fail_context(lms_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

const char *lms_status_name(lms_status status);

/* A caller's way to stop long work: should_stop is polled between pieces of
 * it, possibly from several threads at once, and a non-zero answer abandons
 * the work with LMS_ERR_CANCELLED. A NULL should_stop never stops. */
typedef struct {
    int (*should_stop)(void *ctx);
    void *ctx;
} lms_stop;

#endif
