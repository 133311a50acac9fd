#ifndef CSTREAMUPCURL_CRYPTO_DECLARATIONS_H
#define CSTREAMUPCURL_CRYPTO_DECLARATIONS_H

// The OpenSSL functions the certificate checks use, written out here so that the build needs
// no OpenSSL headers: they are looked up by name in the libcrypto this process has loaded
// already (Debian's libcurl4 links libssl3, which FoundationNetworking's transfers use). Each
// signature is OpenSSL's own (openssl/bio.h, pem.h, x509.h, evp.h, asn1.h, err.h), unchanged
// from OpenSSL 1.1.1 through 3.x. The OpenSSL types are opaque here. Internal to this target.

#include <stddef.h>
#include <time.h>

typedef int (*su_pem_password_callback)(char *buffer, int size, int writing, void *context);

typedef void *(*su_bio_new_mem_buf_function)(const void *bytes, int length);           // BIO_new_mem_buf
typedef int (*su_bio_free_function)(void *bio);                                        // BIO_free
typedef void *(*su_pem_read_x509_function)(void *bio, void **into, su_pem_password_callback, void *);  // PEM_read_bio_X509_AUX
typedef void *(*su_pem_read_key_function)(void *bio, void **into, su_pem_password_callback, void *);   // PEM_read_bio_PrivateKey
typedef int (*su_x509_check_private_key_function)(const void *certificate, const void *key);         // X509_check_private_key
typedef const void *(*su_x509_get0_time_function)(const void *certificate);            // X509_get0_notBefore, X509_get0_notAfter
typedef int (*su_asn1_time_to_tm_function)(const void *time, struct tm *into);         // ASN1_TIME_to_tm
typedef void (*su_free_function)(void *object);                                        // X509_free, EVP_PKEY_free
typedef void (*su_err_clear_function)(void);                                           // ERR_clear_error
typedef unsigned long (*su_err_get_function)(void);                                    // ERR_peek_last_error
typedef void (*su_err_string_function)(unsigned long error, char *buffer, size_t size); // ERR_error_string_n

#endif
