/*
 * test_tokenizer.c — unit tests of the tokenizer (engine/tokenizer/, lmscore.h).
 *
 * Known encodings of the real Qwen3, Llama 3 and Llama 2 tokenizers (the ids
 * were computed with the reference npm packages), special-token splitting,
 * byte fallback, decode with and without special tokens, single-token
 * resolution, added-token flags on a small synthetic tokenizer.json, and
 * precise errors for malformed tokenizer.json files and GGUF metadata. The
 * real tokenizers come from $LMSCORE_BUILD_DIR/tokenizers/<name>/ (fetched by
 * the build's `models` target, which `make test` runs first).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "gguf.h"
#include "mf_gguf.h"
#include "tokenizer.h"

static lms_tokenizer *qwen3, *llama3, *llama2;

static lms_tokenizer *load_real(const char *name)
{
    const char *build = getenv("LMSCORE_BUILD_DIR");
    if (!build) fail_msg("LMSCORE_BUILD_DIR is not set");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/tokenizers/%s", build, name);
    lms_tokenizer *tok = NULL;
    lms_error err = {0};
    if (lms_tokenizer_load_hf(dir, &tok, &err) != LMS_OK)
        fail_msg("%s: %s (run `cmake --build %s --target tokenizers`)", dir, err.msg, build);
    return tok;
}

static int load_all(void **state)
{
    (void)state;
    qwen3 = load_real("qwen3");
    llama3 = load_real("llama3");
    llama2 = load_real("llama2");
    return 0;
}

static int free_all(void **state)
{
    (void)state;
    lms_tokenizer_free(qwen3);
    lms_tokenizer_free(llama3);
    lms_tokenizer_free(llama2);
    return 0;
}

static void expect_ids(const lms_tokenizer *tok, const char *text, size_t len, bool special,
                       const int32_t *want, size_t n_want)
{
    int32_t *ids = NULL;
    size_t n = 0;
    lms_error err = {0};
    assert_int_equal(lms_tokenizer_encode(tok, text, len, special, &ids, &n, &err), LMS_OK);
    assert_int_equal(n, n_want);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(ids[i], want[i]);
    free(ids);
}

#define EXPECT_IDS(tok, text, special, ...)                                                        \
    do {                                                                                           \
        const int32_t want_[] = {__VA_ARGS__};                                                     \
        expect_ids(tok, text, sizeof(text) - 1, special, want_, sizeof want_ / sizeof want_[0]);   \
    } while (0)

static void expect_decoded(const lms_tokenizer *tok, const int32_t *ids, size_t n, bool skip,
                           const char *want)
{
    char *text = NULL;
    size_t len = 0;
    lms_error err = {0};
    assert_int_equal(lms_tokenizer_decode(tok, ids, n, skip, &text, &len, &err), LMS_OK);
    assert_int_equal(len, strlen(want));
    assert_string_equal(text, want);
    free(text);
}

static void test_hello_world(void **state)
{
    (void)state;
    EXPECT_IDS(qwen3, "Hello world", true, 9707, 1879);  /* Qwen adds no BOS */
    EXPECT_IDS(llama3, "Hello world", true, 9906, 1917); /* this tokenizer.json has no template */
    EXPECT_IDS(llama2, "Hello world", true, 1, 22557, 1526);
    EXPECT_IDS(llama2, "Hello world", false, 22557, 1526);
    EXPECT_IDS(qwen3, " Hello  world\n\n", false, 21927, 220, 1879, 271);
    EXPECT_IDS(llama2, " Hello  world\n\n", false, 28705, 22557, 28705, 1526, 13, 13);
    assert_int_equal(lms_tokenizer_bos_id(qwen3), -1);
    assert_int_equal(lms_tokenizer_eos_id(qwen3), 151645);
    assert_int_equal(lms_tokenizer_bos_id(llama3), 128000);
    assert_int_equal(lms_tokenizer_eos_id(llama3), 128001);
    assert_int_equal(lms_tokenizer_bos_id(llama2), 1);
    assert_int_equal(lms_tokenizer_eos_id(llama2), 2);
    assert_int_equal(lms_tokenizer_vocab_size(qwen3), 151669);
    assert_int_equal(lms_tokenizer_vocab_size(llama2), 32000);
}

static void test_special_tokens_split_before_bpe(void **state)
{
    (void)state;
    EXPECT_IDS(qwen3, "<s>hi</s> <|im_start|>x<|endoftext|>", false, 44047, 29, 6023, 522, 82, 29,
               220, 151644, 87, 151643);
    EXPECT_IDS(qwen3, "<think>", false, 151667); /* an added token that is not special */
    EXPECT_IDS(llama3, "<|begin_of_text|>a", true, 128000, 64);
    /* SentencePiece: each text section gets its own dummy prefix. */
    EXPECT_IDS(llama2, "<s>hi</s>", true, 1, 1, 12014, 2);
}

static void test_normalizers_and_merges(void **state)
{
    (void)state;
    EXPECT_IDS(qwen3, "e\xcc\x81", false, 963); /* NFC: e + U+0301 is é */
    EXPECT_IDS(qwen3, "\xc3\xa9", false, 963);
    /* ignore_merges: a word in the vocabulary is one token. */
    EXPECT_IDS(llama3, " Hello", false, 22691);
    EXPECT_IDS(llama3, " aaaaaaa", false, 264, 29558, 5418);
}

static void test_byte_fallback(void **state)
{
    (void)state;
    EXPECT_IDS(llama2, "\xe9\xbe\x98", false, 28705, 236, 193, 155); /* 龘 as <0xE9><0xBE><0x98> */
    const int32_t ids[] = {28705, 236, 193, 155};
    expect_decoded(llama2, ids, 4, false, "\xe9\xbe\x98");
    const int32_t cut[] = {28705, 236}; /* a character cut short decodes to U+FFFD */
    expect_decoded(llama2, cut, 2, false, "\xef\xbf\xbd");
}

static void test_invalid_utf8_is_replaced(void **state)
{
    (void)state;
    int32_t *bad = NULL, *replaced = NULL;
    size_t n_bad = 0, n_replaced = 0;
    lms_error err = {0};
    /* Each maximal invalid subpart is U+FFFD: "\xe4\xb8" is one, "\xff" another. */
    assert_int_equal(lms_tokenizer_encode(qwen3, "a\xe4\xb8\xff", 4, false, &bad, &n_bad, &err),
                     LMS_OK);
    const char clean[] = "a\xef\xbf\xbd\xef\xbf\xbd";
    assert_int_equal(
        lms_tokenizer_encode(qwen3, clean, sizeof clean - 1, false, &replaced, &n_replaced, &err),
        LMS_OK);
    assert_int_equal(n_bad, n_replaced);
    assert_memory_equal(bad, replaced, n_bad * sizeof *bad);
    free(bad);
    free(replaced);
}

static void test_decode(void **state)
{
    (void)state;
    const int32_t l2[] = {1, 22557, 1526};
    expect_decoded(llama2, l2, 3, false, "<s> Hello world");
    expect_decoded(llama2, l2, 3, true, "Hello world");
    const int32_t q[] = {151644, 9707, 1879, 151645};
    expect_decoded(qwen3, q, 4, false, "<|im_start|>Hello world<|im_end|>");
    expect_decoded(qwen3, q, 4, true, "Hello world");
    expect_decoded(qwen3, q, 0, false, "");
    char *text = NULL;
    size_t len;
    lms_error err = {0};
    const int32_t too_big[] = {9707, 151669};
    assert_int_equal(lms_tokenizer_decode(qwen3, too_big, 2, false, &text, &len, &err),
                     LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "token_id_exceeds_vocab");
    const int32_t negative[] = {-1};
    assert_int_equal(lms_tokenizer_decode(qwen3, negative, 1, false, &text, &len, &err),
                     LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "negative_token_id");
    assert_null(text);
}

static void test_single_token(void **state)
{
    (void)state;
    int32_t id = -1;
    lms_error err = {0};
    assert_int_equal(lms_tokenizer_single_token(qwen3, " yes", 4, &id, &err), LMS_OK);
    assert_int_equal(id, 9834);
    assert_int_equal(lms_tokenizer_single_token(qwen3, "yes", 3, &id, &err), LMS_OK);
    assert_int_equal(id, 9693);
    assert_int_equal(lms_tokenizer_single_token(qwen3, "<|im_end|>", 10, &id, &err), LMS_OK);
    assert_int_equal(id, 151645);
    assert_int_equal(lms_tokenizer_single_token(qwen3, " Yes no", 7, &id, &err),
                     LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "label_not_single_token");
    assert_non_null(strstr(err.msg, "2 tokens"));
    assert_int_equal(lms_tokenizer_single_token(qwen3, "", 0, &id, &err), LMS_ERR_INVALID_ARGUMENT);
    assert_string_equal(err.reason, "label_not_single_token");
    /* Llama 2 puts a dummy prefix before every text: "yes" is "▁yes". */
    assert_int_equal(lms_tokenizer_single_token(llama2, "Hello", 5, &id, &err), LMS_OK);
    assert_int_equal(id, 22557);
}

/* ---- synthetic tokenizer.json files ---- */

static char tmp_dir[64];

static int make_tmp_dir(void **state)
{
    (void)state;
    snprintf(tmp_dir, sizeof tmp_dir, "/tmp/test_tokenizer.XXXXXX");
    return mkdtemp(tmp_dir) ? 0 : -1;
}

static int remove_tmp_dir(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp_dir);
    unlink(path);
    return rmdir(tmp_dir);
}

static lms_status load_json_text(const char *json, lms_tokenizer **tok, lms_error *err)
{
    char path[128];
    snprintf(path, sizeof path, "%s/tokenizer.json", tmp_dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    *tok = NULL;
    return lms_tokenizer_load_hf(tmp_dir, tok, err);
}

/* A tiny SentencePiece-style BPE: "a b" merges, <unk> fused, <m> strips the
 * whitespace around it. */
#define TINY_JSON(ADDED_FLAGS, MERGES, MODEL_TYPE, VOCAB_EXTRA)                                    \
    "{\"model\": {\"type\": " MODEL_TYPE ", \"unk_token\": \"<unk>\", \"fuse_unk\": true,"         \
    " \"vocab\": {\"a\": 0, \"b\": 1, \" \": 2, \"ab\": 3, \"<unk>\": 4" VOCAB_EXTRA "},"          \
    " \"merges\": " MERGES "},"                                                                    \
    " \"added_tokens\": [{\"id\": 5, \"content\": \"<m>\", \"special\": true" ADDED_FLAGS "}],"    \
    " \"normalizer\": null, \"pre_tokenizer\": null, \"post_processor\": null,"                    \
    " \"decoder\": {\"type\": \"Fuse\"}}"

static void test_added_token_flags(void **state)
{
    (void)state;
    lms_tokenizer *tok;
    lms_error err = {0};
    assert_int_equal(load_json_text(TINY_JSON(", \"lstrip\": true, \"rstrip\": true", "[\"a b\"]",
                                              "\"BPE\"", ""),
                                    &tok, &err),
                     LMS_OK);
    EXPECT_IDS(tok, "ab \t<m>\n ab", false, 3, 5, 3);
    EXPECT_IDS(tok, "xyz", false, 4); /* unknown characters, fused into one <unk> */
    const int32_t ids[] = {3, 2, 5, 0};
    expect_decoded(tok, ids, 4, true, "ab a");
    lms_tokenizer_free(tok);
    assert_int_equal(load_json_text(TINY_JSON("", "[[\"a\", \"b\"]]", "\"BPE\"", ""), &tok, &err),
                     LMS_OK);
    EXPECT_IDS(tok, "ab <m> ab", false, 3, 2, 5, 2, 3);
    lms_tokenizer_free(tok);
}

static void expect_json_error(const char *json, lms_status status, const char *fragment)
{
    lms_tokenizer *tok;
    lms_error err = {0};
    assert_int_equal(load_json_text(json, &tok, &err), status);
    assert_null(tok);
    if (!strstr(err.msg, fragment)) fail_msg("message \"%s\" lacks \"%s\"", err.msg, fragment);
}

static void test_malformed_json(void **state)
{
    (void)state;
    expect_json_error("{\"model\": ", LMS_ERR_FORMAT, "not valid JSON");
    expect_json_error("[1, 2]", LMS_ERR_FORMAT, "not a JSON object");
    expect_json_error("{}", LMS_ERR_FORMAT, "model is missing");
    expect_json_error(TINY_JSON("", "[\"a b\"]", "\"WordPiece\"", ""), LMS_ERR_UNSUPPORTED,
                      "model type \"WordPiece\"");
    expect_json_error(TINY_JSON("", "[\"a c\"]", "\"BPE\"", ""), LMS_ERR_FORMAT,
                      "merge 0 (\"a\" \"c\") names a token not in the vocabulary");
    expect_json_error(TINY_JSON("", "[\"b a\"]", "\"BPE\"", ""), LMS_ERR_FORMAT,
                      "makes a token not in the vocabulary");
    expect_json_error(TINY_JSON("", "[\"ab\"]", "\"BPE\"", ""), LMS_ERR_FORMAT,
                      "model.merges[0] \"ab\" is not two tokens");
    expect_json_error(TINY_JSON("", "[\"a b\"]", "\"BPE\"", ", \"c\": \"7\""), LMS_ERR_FORMAT,
                      "model.vocab has a value that is not a token id");
    expect_json_error(TINY_JSON("", "[\"a b\"]", "\"BPE\"", ", \"c\": -3"), LMS_ERR_FORMAT,
                      "not a token id");
    lms_tokenizer *tok;
    lms_error err = {0};
    assert_int_equal(lms_tokenizer_load_hf("/nonexistent/dir", &tok, &err), LMS_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/tokenizer.json"));
}

/* ---- GGUF metadata ---- */

/* A GGUF of g's metadata and no tensors, opened from file. */
static lms_status open_gguf(const mf_gguf *g, mf_buf *file, gguf_file **f, lms_error *err)
{
    *file = (mf_buf){0};
    mf_gguf_head(g, file);
    assert_false(file->failed);
    return gguf_open_memory(file->data, file->len, f, err);
}

/* tokenizer.ggml.* of a byte-level tokenizer: the 256 byte symbols, then
 * "ab" merged from "a b", then one control token. */
static void gpt2_metadata(mf_gguf *g, uint64_t n_types, uint32_t bos)
{
    mf_gguf_str(g, "tokenizer.ggml.model", "gpt2");
    mf_gguf_str(g, "tokenizer.ggml.pre", "qwen2");
    mf_gguf_array(g, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, 258);
    for (int byte = 0; byte < 256; byte++) {
        /* GPT-2's map: printable Latin-1 as itself, the rest from U+0100 */
        unsigned cp = byte;
        if (byte <= 0x20)
            cp = 256 + byte;
        else if (byte >= 0x7f && byte <= 0xa0)
            cp = 256 + 33 + (byte - 0x7f);
        else if (byte == 0xad)
            cp = 256 + 67;
        char utf8[4] = {0};
        if (cp < 0x80)
            utf8[0] = (char)cp;
        else {
            utf8[0] = (char)(0xc0 | (cp >> 6));
            utf8[1] = (char)(0x80 | (cp & 0x3f));
        }
        mf_gguf_put_str(&g->kv, utf8);
    }
    mf_gguf_put_str(&g->kv, "ab");
    mf_gguf_put_str(&g->kv, "<|end|>");
    mf_gguf_array(g, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, n_types);
    for (uint64_t i = 0; i < n_types; i++)
        mf_buf_u32(&g->kv, i == 257 ? 3 : 1);
    mf_gguf_array(g, "tokenizer.ggml.merges", GGUF_TYPE_STRING, 1);
    mf_gguf_put_str(&g->kv, "a b");
    mf_gguf_u32(g, "tokenizer.ggml.bos_token_id", bos);
}

static lms_status load_gguf_metadata(mf_gguf *meta, lms_tokenizer **tok, lms_error *err)
{
    mf_buf file;
    gguf_file *f = NULL;
    *tok = NULL;
    lms_status st = open_gguf(meta, &file, &f, err);
    if (st == LMS_OK) st = lms_tokenizer_load_gguf(f, tok, err);
    gguf_close(f);
    mf_buf_free(&file);
    mf_gguf_free(meta);
    return st;
}

static void test_gguf_metadata(void **state)
{
    (void)state;
    mf_gguf b;
    mf_gguf_init(&b);
    lms_tokenizer *tok;
    lms_error err = {0};
    gpt2_metadata(&b, 258, 257);
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_OK);
    EXPECT_IDS(tok, "ab<|end|>a", true, 256, 257, 'a'); /* byte b's symbol has id b */
    const int32_t ids[] = {256, 257, '!'};
    expect_decoded(tok, ids, 3, true, "ab!");
    assert_int_equal(lms_tokenizer_bos_id(tok), 257);
    lms_tokenizer_free(tok);

    mf_gguf_init(&b);
    mf_gguf_str(&b, "general.architecture", "llama");
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "tokenizer.ggml.model"));

    mf_gguf_init(&b);
    mf_gguf_str(&b, "tokenizer.ggml.model", "bert");
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "\"bert\""));

    mf_gguf_init(&b);
    gpt2_metadata(&b, 100, 257);
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "token_type has 100 entries for 258 tokens"));

    mf_gguf_init(&b);
    gpt2_metadata(&b, 258, 9999);
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "bos_token_id = 9999 is outside the vocabulary of 258"));
    assert_null(tok);
}

/* SentencePiece without merges: the adjacent pair whose concatenation scores
 * highest merges first. "ab" is reachable as "▁" + "ab" or "▁a" + "b". */
static void spm_metadata(mf_gguf *g, float score_ab, float score_spiece_a)
{
    static const char *const tokens[] = {"<unk>", "<s>", "</s>", "\xe2\x96\x81",
                                         "a",     "b",   "ab",   "\342\226\201a"};
    const float scores[] = {0, 0, 0, -1, -2, -3, score_ab, score_spiece_a};
    const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1};
    mf_gguf_str(g, "tokenizer.ggml.model", "llama");
    mf_gguf_strs(g, "tokenizer.ggml.tokens", tokens, 8);
    mf_gguf_f32s(g, "tokenizer.ggml.scores", scores, 8);
    mf_gguf_i32s(g, "tokenizer.ggml.token_type", types, 8);
    mf_gguf_u32(g, "tokenizer.ggml.unknown_token_id", 0);
    mf_gguf_u32(g, "tokenizer.ggml.bos_token_id", 1);
    mf_gguf_u32(g, "tokenizer.ggml.eos_token_id", 2);
}

static void test_gguf_sentencepiece_scores(void **state)
{
    (void)state;
    mf_gguf b;
    mf_gguf_init(&b);
    lms_tokenizer *tok;
    lms_error err = {0};
    spm_metadata(&b, -4, -5);
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_OK);
    EXPECT_IDS(tok, "ab", true, 1, 3, 6);     /* BOS by default; "ab" outscores "▁a" */
    EXPECT_IDS(tok, "a xyz", false, 7, 3, 0); /* no byte tokens: unknown text is one <unk> */
    const int32_t ids[] = {1, 3, 6, 7};
    expect_decoded(tok, ids, 4, true, "ab a"); /* the dummy prefix's space is stripped */
    lms_tokenizer_free(tok);
    mf_gguf_init(&b);
    spm_metadata(&b, -5, -4);
    assert_int_equal(load_gguf_metadata(&b, &tok, &err), LMS_OK);
    EXPECT_IDS(tok, "ab", false, 7, 5);
    lms_tokenizer_free(tok);
}

int main(void)
{
    const struct CMUnitTest real[] = {
        cmocka_unit_test(test_hello_world),
        cmocka_unit_test(test_special_tokens_split_before_bpe),
        cmocka_unit_test(test_normalizers_and_merges),
        cmocka_unit_test(test_byte_fallback),
        cmocka_unit_test(test_invalid_utf8_is_replaced),
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_single_token),
    };
    const struct CMUnitTest synthetic[] = {
        cmocka_unit_test(test_added_token_flags),
        cmocka_unit_test(test_malformed_json),
        cmocka_unit_test(test_gguf_metadata),
        cmocka_unit_test(test_gguf_sentencepiece_scores),
    };
    int failed = cmocka_run_group_tests_name("real tokenizers", real, load_all, free_all);
    failed += cmocka_run_group_tests_name("synthetic tokenizers", synthetic, make_tmp_dir,
                                          remove_tmp_dir);
    return failed;
}
