/*
 * mm_out.h — an output file that appears only when complete.
 *
 * mm_out writes to "PATH.tmp" and renames it to PATH on commit, so an
 * interrupted run never leaves a file that looks finished (the build only
 * reruns the maker when its outputs are missing or stale). Write errors are
 * sticky and reported, with errno's text, by mm_out_commit.
 */
#ifndef MM_OUT_H
#define MM_OUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lmscore.h"

typedef struct {
    FILE *file;
    char *path;
    char *tmp_path;
    uint64_t offset; /* bytes written so far */
    int error;       /* first errno seen, 0 if none */
} mm_out;

lms_status mm_out_open(mm_out *out, const char *path, lms_error *err);
void mm_out_write(mm_out *out, const void *data, size_t n);
void mm_out_pad(mm_out *out, uint64_t alignment); /* zeros up to a multiple */
/* Flushes, closes and renames into place; on any error removes the file. */
lms_status mm_out_commit(mm_out *out, lms_error *err);
void mm_out_abort(mm_out *out); /* closes and removes the temporary file */

#endif
