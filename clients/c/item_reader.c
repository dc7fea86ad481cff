/*
 * item_reader.c — line-oriented item input for `stream`.
 */
#include "item_reader.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

bool item_reader_open(item_reader *r, const char *path, bool ids)
{
    memset(r, 0, sizeof *r);
    r->ids = ids;
    if (strcmp(path, "-") == 0) {
        r->in = stdin;
        return true;
    }
    if (!(r->in = fopen(path, "r"))) {
        fprintf(stderr, "lmscore: cannot open %s: %s\n", path, strerror(errno));
        return false;
    }
    r->owns_in = true;
    return true;
}

int64_t item_reader_count(item_reader *r)
{
    struct stat sb;
    if (fstat(fileno(r->in), &sb) != 0 || !S_ISREG(sb.st_mode)) return -1;
    long start = ftell(r->in);
    if (start < 0) return -1;
    int64_t count = 0;
    int c, last = '\n';
    while ((c = getc(r->in)) != EOF) {
        if (c == '\n') count++;
        last = c;
    }
    if (last != '\n') count++; /* a last line without its newline */
    clearerr(r->in);
    return fseek(r->in, start, SEEK_SET) == 0 ? count : -1;
}

bool item_reader_next_batch(item_reader *r, input_list *batch, size_t max)
{
    input_list_clear(batch);
    while (batch->count < max) {
        ssize_t len = getline(&r->line, &r->line_cap, r->in);
        if (len < 0) {
            r->eof = true;
            if (ferror(r->in)) {
                fprintf(stderr, "lmscore: reading items: %s\n", strerror(errno));
                return false;
            }
            return true;
        }
        r->lines++;
        while (len > 0 && (r->line[len - 1] == '\n' || r->line[len - 1] == '\r'))
            r->line[--len] = '\0';
        char where[48];
        snprintf(where, sizeof where, "line %lld", (long long)r->lines);
        Lmscore__V1__Input *item =
            r->ids ? input_from_token_ids(r->line, where) : input_from_text(r->line);
        if (!input_list_push(batch, item)) {
            if (item || !r->ids) fprintf(stderr, "lmscore: out of memory\n");
            return false;
        }
    }
    return true;
}

void item_reader_close(item_reader *r)
{
    if (r->owns_in) fclose(r->in);
    free(r->line);
    memset(r, 0, sizeof *r);
}
