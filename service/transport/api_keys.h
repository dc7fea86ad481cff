/*
 * api_keys.h — who may call: the keys of --api-key-file, checked against
 * the "authorization: Bearer KEY" of a gRPC call's metadata or an HTTP
 * request's header. The keys are kept only as SHA-256 digests and compared
 * in constant time; no key, presented or configured, is ever logged or
 * echoed in an error.
 */
#ifndef LMSCORED_API_KEYS_H
#define LMSCORED_API_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "lmscore.h"
#include "status_details.h"

typedef struct api_keys api_keys;

/* Loads the key file: one key per line, surrounding blanks ignored, empty
 * lines and lines starting with '#' skipped. A key is a bearer token
 * (RFC 6750: letters, digits and -._~+/, then '=' padding). Fails with err
 * (field "api-key-file", naming the line, never the key) on a line that is
 * not one, or a file without keys. */
lms_status api_keys_load(const char *path, api_keys **out, lms_error *err);
void api_keys_free(api_keys *k);
size_t api_keys_count(const api_keys *k);

/* Checks the authorization header of a call that carries n of them, the
 * first one's value given (len bytes, all of them: a NUL inside is part of
 * the value, never its end; NULL when n is 0). True when k is NULL (no
 * keys: every call may) or the call has exactly one and its value is
 * "Bearer KEY" (the scheme in any case) with one of the keys; otherwise
 * fills st: UNAUTHENTICATED with reason missing_api_key (none) or
 * invalid_api_key (a wrong key, or several headers: which one a server
 * reads is every proxy's own guess, so none counts). Takes the same time
 * whichever key matches, and whether one does. */
bool api_keys_check(const api_keys *k, const char *authorization, size_t len, size_t n,
                    rpc_status *st);

#endif
