/*
 * api_keys.c — the key file and the bearer check (see api_keys.h). Each key
 * is held as its SHA-256 digest: comparing digests of equal length with
 * CRYPTO_memcmp, over every key without stopping at a match, takes the same
 * time whatever the presented token shares with a key, its length included.
 */
#include "api_keys.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "read_file.h"

#define DIGEST_BYTES  32
#define MAX_FILE_SIZE ((size_t)1 << 20)

struct api_keys {
    size_t n;
    uint8_t (*digests)[DIGEST_BYTES];
};

static bool digest(const char *text, size_t len, uint8_t out[DIGEST_BYTES])
{
    unsigned n = 0;
    return EVP_Digest(text, len, out, &n, EVP_sha256(), NULL) == 1 && n == DIGEST_BYTES;
}

/* RFC 6750's b64token: 1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"=" */
static bool is_bearer_token(const char *s, size_t len)
{
    size_t i = 0;
    /* s[i] first: strchr finds the terminator, so NUL would pass */
    while (i < len && s[i] &&
           (('a' <= (s[i] | 0x20) && (s[i] | 0x20) <= 'z') || ('0' <= s[i] && s[i] <= '9') ||
            strchr("-._~+/", s[i])))
        i++;
    if (i == 0) return false;
    while (i < len && s[i] == '=')
        i++;
    return i == len;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

lms_status api_keys_load(const char *path, api_keys **out, lms_error *err)
{
    size_t size;
    char *text = read_file(path, "api-key-file", MAX_FILE_SIZE, &size, err);
    if (!text) return err ? err->status : LMS_ERR_IO;
    api_keys *k = calloc(1, sizeof *k);
    size_t lines = 1;
    for (size_t i = 0; i < size; i++)
        lines += text[i] == '\n';
    if (k) k->digests = calloc(lines, sizeof *k->digests);
    lms_status st = LMS_OK;
    if (!k || !k->digests) st = lms_fail(err, LMS_ERR_NOMEM, NULL, "api-key-file", "out of memory");
    const char *line = text;
    for (size_t number = 1; st == LMS_OK && line < text + size; number++) {
        const char *end = memchr(line, '\n', (size_t)(text + size - line));
        if (!end) end = text + size;
        const char *b = line, *e = end;
        while (b < e && is_blank(*b))
            b++;
        while (e > b && is_blank(e[-1]))
            e--;
        if (b < e && *b != '#') {
            if (!is_bearer_token(b, (size_t)(e - b)))
                st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "api-key-file",
                              "--api-key-file %s: line %zu is not a bearer token (letters, "
                              "digits and -._~+/, then '=' padding)",
                              path, number);
            else if (!digest(b, (size_t)(e - b), k->digests[k->n++]))
                st = lms_fail(err, LMS_ERR_INTERNAL, NULL, "api-key-file",
                              "SHA-256 is not available");
        }
        line = end + 1;
    }
    if (st == LMS_OK && k->n == 0)
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "api-key-file",
                      "--api-key-file %s holds no key", path);
    /* the file's text held the keys in clear */
    OPENSSL_cleanse(text, size);
    free(text);
    if (st != LMS_OK) {
        api_keys_free(k);
        return st;
    }
    *out = k;
    return LMS_OK;
}

void api_keys_free(api_keys *k)
{
    if (!k) return;
    free(k->digests);
    free(k);
}

size_t api_keys_count(const api_keys *k)
{
    return k ? k->n : 0;
}

bool api_keys_check(const api_keys *k, const char *authorization, size_t len, size_t n,
                    rpc_status *st)
{
    if (!k) return true;
    if (n > 1) {
        rpc_status_set(st, GRPC_STATUS_UNAUTHENTICATED, "invalid_api_key", NULL,
                       "the call carries %zu authorization headers; send one", n);
        return false;
    }
    if (!authorization || n == 0) {
        rpc_status_set(st, GRPC_STATUS_UNAUTHENTICATED, "missing_api_key", NULL,
                       "this server needs an API key: send the header "
                       "\"authorization: Bearer KEY\"");
        return false;
    }
    static const char scheme[] = "bearer ";
    const size_t scheme_len = sizeof scheme - 1;
    bool matched = false;
    if (len > scheme_len && strncasecmp(authorization, scheme, scheme_len) == 0) {
        const char *token = authorization + scheme_len;
        size_t token_len = len - scheme_len;
        while (token_len && *token == ' ')
            token++, token_len--;
        uint8_t presented[DIGEST_BYTES];
        if (digest(token, token_len, presented)) {
            int differs_from_all = 1;
            for (size_t i = 0; i < k->n; i++)
                differs_from_all &= CRYPTO_memcmp(presented, k->digests[i], DIGEST_BYTES) != 0;
            matched = !differs_from_all;
        }
    }
    if (!matched)
        rpc_status_set(st, GRPC_STATUS_UNAUTHENTICATED, "invalid_api_key", NULL,
                       "the API key is not one of this server's keys (the header is "
                       "\"authorization: Bearer KEY\")");
    return matched;
}
