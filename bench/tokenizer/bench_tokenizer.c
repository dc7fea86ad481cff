/*
 * bench_tokenizer.c — encode throughput of a tokenizer over the corpus.
 *
 *   bench_tokenizer TOKENIZER CORPUS
 *
 * Encodes every line (with special tokens, as the reference benchmark does)
 * in whole passes until at least one second has gone, single-threaded, and
 * prints one JSON line: input bytes per pass, passes, seconds, MB/s.
 */
#include <stdio.h>
#include <stdlib.h>

#include "clock.h"
#include "corpus_io.h"
#include "tokenizer.h"

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER CORPUS\n", argv[0]);
        return 2;
    }
    corpus c;
    if (corpus_read(argv[2], 0, &c)) return 2;
    lms_tokenizer *tok = corpus_open_tokenizer(argv[1]);
    if (!tok) return 2;
    size_t bytes = 0, ids_total = 0, passes = 0;
    for (size_t i = 0; i < c.n; i++)
        bytes += c.lines[i].len;
    double start = monotonic_seconds(), elapsed;
    do {
        for (size_t i = 0; i < c.n; i++) {
            int32_t *ids;
            size_t n;
            lms_error err;
            if (lms_tokenizer_encode(tok, c.lines[i].text, c.lines[i].len, true, &ids, &n, &err)) {
                fprintf(stderr, "line %zu: %s\n", i + 1, err.msg);
                return 1;
            }
            ids_total += n;
            free(ids);
        }
        passes++;
        elapsed = monotonic_seconds() - start;
    } while (elapsed < 1.0);
    printf(
        "{\"bytes\": %zu, \"passes\": %zu, \"seconds\": %.3f, \"ids\": %zu, \"mb_per_s\": %.2f}\n",
        bytes, passes, elapsed, ids_total, (double)bytes * (double)passes / elapsed / 1e6);
    lms_tokenizer_free(tok);
    corpus_free(&c);
    return 0;
}
