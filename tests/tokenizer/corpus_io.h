/*
 * corpus_io.h — reading the tokenizer corpus files (shared by the comparison
 * test and the benchmark): corpus.txt holds one JSON string per line,
 * invalid_utf8.txt one line of hex bytes per line.
 */
#ifndef LMS_TESTS_CORPUS_IO_H
#define LMS_TESTS_CORPUS_IO_H

#include <stddef.h>

typedef struct {
    char *text; /* malloc'ed, NUL-terminated, may contain NULs */
    size_t len;
} corpus_line;

typedef struct {
    corpus_line *lines;
    size_t n;
} corpus;

/* Reads path; hex selects the invalid_utf8.txt format. Returns 0 on success,
 * -1 after printing why to stderr. */
int corpus_read(const char *path, int hex, corpus *out);
void corpus_free(corpus *c);

/* Opens a tokenizer from a Hugging Face directory or a .gguf file (by the
 * path's suffix); prints the error and returns NULL on failure. */
struct lms_tokenizer *corpus_open_tokenizer(const char *path);

#endif
