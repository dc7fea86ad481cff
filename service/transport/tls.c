/*
 * tls.c — the server's credentials (see tls.h). gRPC core accepts any text
 * as a certificate or key and only fails later, when the port is added, in
 * words indistinguishable from a port in use; OpenSSL reads the files here
 * first so that the daemon can say what is wrong with them.
 */
#include "tls.h"

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "read_file.h"

/* Never asks for a passphrase (OpenSSL's default reads the terminal): an
 * encrypted key fails to load. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
    (void)buf, (void)size, (void)rwflag, (void)u;
    return 0;
}

static lms_status check_pair(const char *cert_pem, const char *cert_path, const char *key_pem,
                             const char *key_path, lms_error *err)
{
    BIO *cert_bio = BIO_new_mem_buf(cert_pem, -1);
    BIO *key_bio = BIO_new_mem_buf(key_pem, -1);
    X509 *cert = cert_bio ? PEM_read_bio_X509(cert_bio, NULL, no_passphrase, NULL) : NULL;
    EVP_PKEY *key = key_bio ? PEM_read_bio_PrivateKey(key_bio, NULL, no_passphrase, NULL) : NULL;
    lms_status st = LMS_OK;
    if (!cert_bio || !key_bio)
        st = lms_fail(err, LMS_ERR_NOMEM, NULL, "tls-cert", "out of memory reading the TLS files");
    else if (!cert && strstr(cert_pem, "PRIVATE KEY-----"))
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-cert",
                      "tls-cert %s holds a private key, not a certificate: are --tls-cert and "
                      "--tls-key swapped?",
                      cert_path);
    else if (!cert)
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-cert",
                      "tls-cert %s holds no PEM certificate", cert_path);
    else if (!key && strstr(key_pem, "-----BEGIN CERTIFICATE-----"))
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-key",
                      "tls-key %s holds a certificate, not a private key: are --tls-cert and "
                      "--tls-key swapped?",
                      key_path);
    else if (!key)
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-key",
                      "tls-key %s holds no PEM private key (or an encrypted one)", key_path);
    else if (X509_check_private_key(cert, key) != 1)
        st = lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-key",
                      "tls-key %s is not the private key of the certificate in %s", key_path,
                      cert_path);
    X509_free(cert);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    ERR_clear_error(); /* leave OpenSSL's error queue as gRPC expects it */
    return st;
}

lms_status tls_read_pair(const char *cert_path, const char *key_path, tls_pem_pair *out,
                         lms_error *err)
{
    out->cert = read_file(cert_path, "tls-cert", TLS_MAX_FILE_BYTES, NULL, err);
    out->key = out->cert ? read_file(key_path, "tls-key", TLS_MAX_FILE_BYTES, NULL, err) : NULL;
    lms_status st = out->key ? check_pair(out->cert, cert_path, out->key, key_path, err)
                             : (err ? err->status : LMS_ERR_IO);
    if (st != LMS_OK) tls_pem_pair_free(out);
    return st;
}

void tls_pem_pair_free(tls_pem_pair *p)
{
    free(p->cert);
    free(p->key);
    p->cert = p->key = NULL;
}

SSL_CTX *tls_server_context(const tls_pem_pair *pem, lms_error *err)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    BIO *cert_bio = BIO_new_mem_buf(pem->cert, -1);
    BIO *key_bio = BIO_new_mem_buf(pem->key, -1);
    X509 *leaf = cert_bio ? PEM_read_bio_X509(cert_bio, NULL, no_passphrase, NULL) : NULL;
    EVP_PKEY *key = key_bio ? PEM_read_bio_PrivateKey(key_bio, NULL, no_passphrase, NULL) : NULL;
    bool ok = ctx && leaf && key && SSL_CTX_use_certificate(ctx, leaf) == 1 &&
              SSL_CTX_use_PrivateKey(ctx, key) == 1 &&
              SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) == 1;
    for (X509 *extra; ok && (extra = PEM_read_bio_X509(cert_bio, NULL, no_passphrase, NULL));)
        if (SSL_CTX_add0_chain_cert(ctx, extra) != 1) {
            X509_free(extra);
            ok = false;
        }
    if (ok) {
        SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
        /* a write retried after WANT_WRITE may come from a buffer that grew */
        SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    }
    X509_free(leaf);
    EVP_PKEY_free(key);
    BIO_free(cert_bio);
    BIO_free(key_bio);
    ERR_clear_error();
    if (ok) return ctx;
    SSL_CTX_free(ctx);
    lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-cert",
             "OpenSSL refused the TLS certificate and key for the HTTP server");
    return NULL;
}

grpc_server_credentials *tls_server_credentials(const char *cert_path, const char *key_path,
                                                lms_error *err)
{
    if (!cert_path || !cert_path[0]) return grpc_insecure_server_credentials_create();
    tls_pem_pair pem;
    if (tls_read_pair(cert_path, key_path, &pem, err) != LMS_OK) return NULL;
    grpc_ssl_pem_key_cert_pair pair = {.private_key = pem.key, .cert_chain = pem.cert};
    grpc_server_credentials *creds = grpc_ssl_server_credentials_create(NULL, &pair, 1, 0, NULL);
    if (!creds)
        lms_fail(err, LMS_ERR_INVALID_ARGUMENT, NULL, "tls-cert",
                 "gRPC refused the TLS certificate %s and key %s", cert_path, key_path);
    tls_pem_pair_free(&pem);
    return creds;
}
