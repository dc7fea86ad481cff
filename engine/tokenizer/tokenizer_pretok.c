/*
 * tokenizer_pretok.c — the regex pre-tokenizer: compiling the model's split
 * pattern with PCRE2 and splitting text into pieces.
 *
 * The patterns come from tokenizer.json (Rust regex syntax) or are the
 * well-known ones a GGUF names. The reference runs them as ECMAScript
 * regexes with the u flag, so they are compiled with ECMAScript's class
 * semantics: PCRE2_UTF without PCRE2_UCP keeps \d and \w ASCII as in
 * ECMAScript, \s and \S are spelled out as ECMAScript's set (which differs
 * from PCRE2's), and the case-insensitive contraction group that ECMAScript
 * cannot parse is rewritten the way the reference rewrites it (ASCII case
 * only). \p{L} and \p{N} come from PCRE2's Unicode tables.
 */
#include <stdlib.h>
#include <string.h>

#include "tokenizer_impl.h"

const char tok_regex_gpt2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
const char tok_regex_llama3[] =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char tok_regex_qwen2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
                               "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

static const char contractions_rust[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)";
static const char contractions_js[] = "(?:'([sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD]))";
static const char js_space_members[] = "\\t-\\r\\p{Zs}\\x{2028}\\x{2029}\\x{FEFF}";

/* Rewrites pattern into PCRE2 syntax with ECMAScript semantics. */
static lms_status translate(const char *pattern, size_t len, tok_buf *out, lms_error *err)
{
    bool in_class = false, ok = true;
    for (size_t i = 0; i < len && ok;) {
        size_t rest = len - i;
        if (!in_class && rest >= sizeof contractions_rust - 1 &&
            !memcmp(pattern + i, contractions_rust, sizeof contractions_rust - 1)) {
            ok = tok_buf_put(out, contractions_js, sizeof contractions_js - 1);
            i += sizeof contractions_rust - 1;
            continue;
        }
        char c = pattern[i];
        if (c == '\\' && rest >= 2) {
            char e = pattern[i + 1];
            if (e == 's') {
                ok = in_class
                         ? tok_buf_put(out, js_space_members, sizeof js_space_members - 1)
                         : tok_buf_put(out, "[", 1) &&
                               tok_buf_put(out, js_space_members, sizeof js_space_members - 1) &&
                               tok_buf_put(out, "]", 1);
            } else if (e == 'S') {
                if (in_class)
                    return lms_fail(err, LMS_ERR_UNSUPPORTED, NULL, NULL,
                                    "tokenizer: pre-tokenizer regex uses \\S inside a class");
                ok = tok_buf_put(out, "[^", 2) &&
                     tok_buf_put(out, js_space_members, sizeof js_space_members - 1) &&
                     tok_buf_put(out, "]", 1);
            } else {
                ok = tok_buf_put(out, pattern + i, 2);
            }
            i += 2;
            continue;
        }
        if (c == '[' && !in_class)
            in_class = true;
        else if (c == ']' && in_class)
            in_class = false;
        ok = tok_buf_put(out, &c, 1);
        i++;
    }
    if (!ok) return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    if (!out->buf && !tok_buf_put(out, "", 0))
        return lms_fail(err, LMS_ERR_NOMEM, NULL, NULL, "tokenizer: no memory");
    return LMS_OK;
}

lms_status tok_regex_compile(const char *pattern, size_t len, pcre2_code **out, lms_error *err)
{
    tok_buf js = {0};
    lms_status st = translate(pattern, len, &js, err);
    if (st != LMS_OK) {
        free(js.buf);
        return st;
    }
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)js.buf, js.len, PCRE2_UTF, &code, &offset, NULL);
    free(js.buf);
    if (!re) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(code, msg, sizeof msg);
        return lms_fail(err, LMS_ERR_FORMAT, NULL, NULL,
                        "tokenizer: pre-tokenizer regex \"%.*s\" does not compile: %s",
                        (int)(len > 120 ? 120 : len), pattern, (const char *)msg);
    }
    /* Without JIT (not built for this CPU) the interpreter gives the same
     * matches, only slower. */
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    *out = re;
    return LMS_OK;
}

/* Finds the next match at or after start; false when there is none. */
static lms_status next_match(const pcre2_code *re, const char *text, size_t len, size_t start,
                             pcre2_match_data *md, size_t *m_start, size_t *m_end, bool *found,
                             lms_error *err)
{
    int rc = pcre2_match(re, (PCRE2_SPTR)text, len, start, PCRE2_NO_UTF_CHECK, md, NULL);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT) /* the interpreter keeps its frames on the heap */
        rc = pcre2_match(re, (PCRE2_SPTR)text, len, start, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT, md,
                         NULL);
    if (rc == PCRE2_ERROR_NOMATCH) {
        *found = false;
        return LMS_OK;
    }
    if (rc < 0) {
        PCRE2_UCHAR msg[160];
        pcre2_get_error_message(rc, msg, sizeof msg);
        return lms_fail(err, LMS_ERR_RESOURCE_EXHAUSTED, NULL, NULL,
                        "tokenizer: pre-tokenizer regex failed on the text: %s", (const char *)msg);
    }
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
    *m_start = ov[0];
    *m_end = ov[1];
    *found = true;
    return LMS_OK;
}

static lms_status split_level(const lms_tokenizer *tok, int level, const char *text, size_t len,
                              pcre2_match_data *md, tok_piece_fn emit, void *ctx, lms_error *err)
{
    if (level == tok->n_split) return emit(ctx, text, len, err);
    size_t prev = 0, pos = 0;
    while (pos <= len) {
        size_t ms = 0, me = 0;
        bool found;
        lms_status st = next_match(tok->split[level], text, len, pos, md, &ms, &me, &found, err);
        if (st != LMS_OK) return st;
        if (!found) break;
        /* Isolated: the gap before a match and the match are both pieces. */
        if (ms > prev) {
            st = split_level(tok, level + 1, text + prev, ms - prev, md, emit, ctx, err);
            if (st != LMS_OK) return st;
        }
        if (me > ms) {
            st = split_level(tok, level + 1, text + ms, me - ms, md, emit, ctx, err);
            if (st != LMS_OK) return st;
            pos = me;
        } else { /* an empty match moves on by one code point, as matchAll does */
            if (ms >= len) {
                prev = ms;
                break;
            }
            uint32_t cp;
            pos = ms + tok_utf8_next(text + ms, len - ms, &cp);
        }
        prev = me;
    }
    if (prev < len) return split_level(tok, level + 1, text + prev, len - prev, md, emit, ctx, err);
    return LMS_OK;
}

lms_status tok_pretokenize(const lms_tokenizer *tok, const char *text, size_t len,
                           pcre2_match_data *md, tok_piece_fn emit, void *ctx, lms_error *err)
{
    return split_level(tok, 0, text, len, md, emit, ctx, err);
}
