/*
 * tls.h — the server's credentials: plaintext, or TLS from the PEM files
 * of --tls-cert and --tls-key, checked before gRPC sees them.
 */
#ifndef LMSCORED_TLS_H
#define LMSCORED_TLS_H

#include <grpc/grpc_security.h>

#include "lmscore.h"

/* Insecure credentials when cert_path is NULL or empty; otherwise TLS from
 * the certificate chain in cert_path and its private key in key_path. NULL
 * with err set (field "tls-cert" or "tls-key") when a file cannot be read,
 * holds no certificate or no private key (swapped files are named as
 * such), or the key does not belong to the certificate. */
grpc_server_credentials *tls_server_credentials(const char *cert_path, const char *key_path,
                                                lms_error *err);

#endif
