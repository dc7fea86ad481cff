/*
 * tls.h — the server's credentials: plaintext, or TLS from the PEM files
 * of --tls-cert and --tls-key, checked before gRPC (or the HTTP server)
 * sees them; the HTTP listener's OpenSSL context.
 */
#ifndef LMSCORED_TLS_H
#define LMSCORED_TLS_H

#include <grpc/grpc_security.h>
#include <openssl/ssl.h>

#include "lmscore.h"

/* A PEM file larger than this is not a certificate chain or a key. */
#define TLS_MAX_FILE_BYTES ((size_t)1 << 20)

/* The certificate chain and private key as PEM text, NUL-terminated. */
typedef struct {
    char *cert;
    char *key;
} tls_pem_pair;

/* Reads and checks the pair: fails with err set (field "tls-cert" or
 * "tls-key") when a file cannot be read, holds no certificate or no private
 * key (swapped files are named as such), or the key does not belong to the
 * certificate. */
lms_status tls_read_pair(const char *cert_path, const char *key_path, tls_pem_pair *out,
                         lms_error *err);
void tls_pem_pair_free(tls_pem_pair *p);

/* An OpenSSL server context for the HTTP listener from a checked pair (the
 * certificate first, the rest of the chain after it): TLS 1.2 and later, no
 * renegotiation. NULL with err set when OpenSSL refuses it. */
SSL_CTX *tls_server_context(const tls_pem_pair *pem, lms_error *err);

/* Insecure credentials when cert_path is NULL or empty; otherwise TLS from
 * tls_read_pair's files. NULL with err set when that fails. */
grpc_server_credentials *tls_server_credentials(const char *cert_path, const char *key_path,
                                                lms_error *err);

#endif
