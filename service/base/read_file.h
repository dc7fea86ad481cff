/*
 * read_file.h — a small file read whole into memory: the TLS PEM files, the
 * API key file, a rerank profile. Errors name the flag that gave the path.
 */
#ifndef LMSCORED_READ_FILE_H
#define LMSCORED_READ_FILE_H

#include <stddef.h>

#include "lmscore.h"

/* The contents of path, NUL-terminated (*len bytes before the NUL when len
 * is not NULL), malloc'ed for the caller; NULL with err set (field flag,
 * e.g. "tls-cert") when it cannot be opened, read, or is over max_bytes. */
char *read_file(const char *path, const char *flag, size_t max_bytes, size_t *len, lms_error *err);

#endif
