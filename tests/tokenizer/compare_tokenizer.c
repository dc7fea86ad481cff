/*
 * compare_tokenizer.c — the C tokenizer against the reference's output.
 *
 *   compare_tokenizer TOKENIZER CORPUS EXPECTED_JSONL [hex]
 *
 * TOKENIZER is a Hugging Face directory or a .gguf file. EXPECTED_JSONL is
 * what tests/tokenizer/reference.js wrote for CORPUS (hex: the corpus is
 * invalid_utf8.txt). Per line the ids with and without special tokens must be
 * identical, decode(plain ids) must equal the reference's decode, and it must
 * give the line back except where the reference does not either (its
 * normalizer changed the text: NFC, SentencePiece spaces around added
 * tokens) or the line is not valid UTF-8. Prints the counts; exits 1 on any
 * mismatch.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "corpus_io.h"
#include "tokenizer.h"

#define MAX_REPORTS 10

typedef struct {
    size_t lines, id_mismatches, decode_mismatches, roundtrip_failures, normalized_lines;
    size_t tokens;
} tally;

static bool ids_equal(json_object *expected, const int32_t *ids, size_t n)
{
    if (!expected || !json_object_is_type(expected, json_type_array) ||
        json_object_array_length(expected) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (json_object_get_int(json_object_array_get_idx(expected, i)) != ids[i]) return false;
    return true;
}

static void report(size_t line, const char *what, json_object *expected, const int32_t *ids,
                   size_t n)
{
    fprintf(stderr, "line %zu: %s\n  expected %s\n  got      [", line, what,
            json_object_to_json_string_ext(expected, JSON_C_TO_STRING_PLAIN));
    for (size_t i = 0; i < n; i++)
        fprintf(stderr, "%s%d", i ? "," : "", (int)ids[i]);
    fprintf(stderr, "]\n");
}

static int check_line(const lms_tokenizer *tok, const corpus_line *line, size_t no,
                      json_object *expected, bool hex, tally *t)
{
    lms_error err = {0};
    int32_t *special = NULL, *plain = NULL;
    size_t n_special = 0, n_plain = 0;
    if (lms_tokenizer_encode(tok, line->text, line->len, true, &special, &n_special, &err) ||
        lms_tokenizer_encode(tok, line->text, line->len, false, &plain, &n_plain, &err)) {
        fprintf(stderr, "line %zu: encode failed: %s\n", no, err.msg);
        free(special);
        return -1;
    }
    t->lines++;
    t->tokens += n_plain;
    json_object *exp_special = NULL, *exp_plain = NULL, *exp_decoded = NULL;
    json_object_object_get_ex(expected, "special", &exp_special);
    json_object_object_get_ex(expected, "plain", &exp_plain);
    json_object_object_get_ex(expected, "decoded", &exp_decoded);
    if (!ids_equal(exp_special, special, n_special)) {
        if (t->id_mismatches < MAX_REPORTS)
            report(no, "ids with special tokens differ", exp_special, special, n_special);
        t->id_mismatches++;
    } else if (!ids_equal(exp_plain, plain, n_plain)) {
        if (t->id_mismatches < MAX_REPORTS)
            report(no, "ids without special tokens differ", exp_plain, plain, n_plain);
        t->id_mismatches++;
    }
    char *text = NULL;
    size_t len = 0;
    if (lms_tokenizer_decode(tok, plain, n_plain, false, &text, &len, &err)) {
        fprintf(stderr, "line %zu: decode failed: %s\n", no, err.msg);
        free(special);
        free(plain);
        return -1;
    }
    const char *ref = json_object_get_string(exp_decoded);
    size_t ref_len = (size_t)json_object_get_string_len(exp_decoded);
    if (ref_len != len || memcmp(ref, text, len)) {
        if (t->decode_mismatches < MAX_REPORTS)
            fprintf(stderr, "line %zu: decode differs\n  expected %s\n  got      %s\n", no, ref,
                    text);
        t->decode_mismatches++;
    }
    bool reference_round_trips = ref_len == line->len && !memcmp(ref, line->text, ref_len);
    bool round_trips = len == line->len && !memcmp(text, line->text, len);
    if (!hex && reference_round_trips && !round_trips) t->roundtrip_failures++;
    if (!hex && !reference_round_trips) t->normalized_lines++;
    free(text);
    free(special);
    free(plain);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5 || (argc == 5 && strcmp(argv[4], "hex"))) {
        fprintf(stderr, "usage: %s TOKENIZER CORPUS EXPECTED_JSONL [hex]\n", argv[0]);
        return 2;
    }
    bool hex = argc == 5;
    corpus c;
    if (corpus_read(argv[2], hex, &c)) return 2;
    lms_tokenizer *tok = corpus_open_tokenizer(argv[1]);
    FILE *f = fopen(argv[3], "r");
    if (!tok || !f) {
        if (!f) perror(argv[3]);
        return 2;
    }
    tally t = {0};
    char *buf = NULL;
    size_t cap = 0;
    int rc = 0;
    for (size_t i = 0; i < c.n && rc == 0; i++) {
        json_object *expected = getline(&buf, &cap, f) > 0 ? json_tokener_parse(buf) : NULL;
        if (!expected) {
            fprintf(stderr, "%s: no reference for line %zu\n", argv[3], i + 1);
            rc = 2;
            break;
        }
        if (check_line(tok, &c.lines[i], i + 1, expected, hex, &t)) rc = 1;
        json_object_put(expected);
    }
    printf("%s on %s: %zu lines, %zu tokens, %zu id mismatches, %zu decode mismatches, "
           "%zu round-trip failures, %zu lines the model's normalizer changes\n",
           argv[1], argv[2], t.lines, t.tokens, t.id_mismatches, t.decode_mismatches,
           t.roundtrip_failures, t.normalized_lines);
    if (t.id_mismatches || t.decode_mismatches || t.roundtrip_failures) rc = rc ? rc : 1;
    free(buf);
    fclose(f);
    lms_tokenizer_free(tok);
    corpus_free(&c);
    return rc;
}
