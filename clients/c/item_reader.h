/*
 * item_reader.h — items read from a file or stdin, one per line (text, or
 * token ids with --ids), in batches.
 */
#ifndef LMSCORE_CLI_ITEM_READER_H
#define LMSCORE_CLI_ITEM_READER_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "inputs.h"

typedef struct {
    FILE *in;
    bool owns_in; /* opened here (not stdin) */
    bool ids;     /* lines are token ids */
    char *line;
    size_t line_cap;
    int64_t lines; /* lines read so far */
    bool eof;
} item_reader;

/* Opens path ("-" for stdin); false with a message when it cannot. */
bool item_reader_open(item_reader *r, const char *path, bool ids);
/* Counts the items of a regular file without consuming them; -1 for pipes. */
int64_t item_reader_count(item_reader *r);
/* Clears batch and reads up to max items into it; false (with a message
 * naming the line) on a malformed line, a read error or out of memory.
 * r->eof tells when the input is exhausted. */
bool item_reader_next_batch(item_reader *r, input_list *batch, size_t max);
void item_reader_close(item_reader *r);

#endif
