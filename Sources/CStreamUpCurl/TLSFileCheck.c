// Checks of PEM certificates and keys with the OpenSSL that libcurl itself uses, so that the
// verdict before anything is sent is the one libcurl would reach at a connection: a
// certificate it can read, a private key it can read without a pass phrase, and the key that
// belongs to the certificate (X509_check_private_key, as libcurl's SSL_CTX_check_private_key).
//
// No OpenSSL headers and no link: Debian's libcurl4 depends on libssl3, so libcrypto is in
// every process whose URLSession can speak TLS; its functions are looked up by name once
// (CryptoDeclarations.h has their signatures). Where none is found, the checks answer
// "unavailable" and the caller skips them (libcurl still refuses a bad pair at a connection).
//
// Thread safety: the looked-up functions are set once (pthread_once) and never change;
// OpenSSL's error queue is per thread; every call works on its own objects.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"
#include "CryptoDeclarations.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static struct {
    su_bio_new_mem_buf_function bio_new_mem_buf;
    su_bio_free_function bio_free;
    su_pem_read_x509_function read_certificate;
    su_pem_read_key_function read_key;
    su_x509_check_private_key_function check_private_key;
    su_x509_get0_time_function not_before;
    su_x509_get0_time_function not_after;
    su_asn1_time_to_tm_function time_to_tm;
    su_free_function free_certificate;
    su_free_function free_key;
    su_err_clear_function clear_errors;
    su_err_get_function last_error;
    su_err_string_function error_string;
    int complete;
} crypto;
static pthread_once_t crypto_once = PTHREAD_ONCE_INIT;

static void *find(void *library, const char *name) {
    return library == NULL ? dlsym(RTLD_DEFAULT, name) : dlsym(library, name);
}

static void look_up_crypto(void) {
    void *library = NULL;
    // The libcrypto libcurl loaded; else (a libcurl built on another TLS library) the system's.
    if (dlsym(RTLD_DEFAULT, "X509_check_private_key") == NULL) {
        library = dlopen("libcrypto.so.3", RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) library = dlopen("libcrypto.so.1.1", RTLD_NOW | RTLD_LOCAL);
        if (library == NULL) return;
    }
    crypto.bio_new_mem_buf = (su_bio_new_mem_buf_function)find(library, "BIO_new_mem_buf");
    crypto.bio_free = (su_bio_free_function)find(library, "BIO_free");
    crypto.read_certificate = (su_pem_read_x509_function)find(library, "PEM_read_bio_X509_AUX");
    crypto.read_key = (su_pem_read_key_function)find(library, "PEM_read_bio_PrivateKey");
    crypto.check_private_key = (su_x509_check_private_key_function)find(library, "X509_check_private_key");
    crypto.not_before = (su_x509_get0_time_function)find(library, "X509_get0_notBefore");
    crypto.not_after = (su_x509_get0_time_function)find(library, "X509_get0_notAfter");
    crypto.time_to_tm = (su_asn1_time_to_tm_function)find(library, "ASN1_TIME_to_tm");
    crypto.free_certificate = (su_free_function)find(library, "X509_free");
    crypto.free_key = (su_free_function)find(library, "EVP_PKEY_free");
    crypto.clear_errors = (su_err_clear_function)find(library, "ERR_clear_error");
    crypto.last_error = (su_err_get_function)find(library, "ERR_peek_last_error");
    crypto.error_string = (su_err_string_function)find(library, "ERR_error_string_n");
    crypto.complete = crypto.bio_new_mem_buf && crypto.bio_free && crypto.read_certificate && crypto.read_key
        && crypto.check_private_key && crypto.not_before && crypto.not_after && crypto.time_to_tm && crypto.free_certificate
        && crypto.free_key && crypto.clear_errors && crypto.last_error && crypto.error_string;
}

static int have_crypto(void) {
    pthread_once(&crypto_once, look_up_crypto);
    return crypto.complete;
}

// A pass phrase is never given: an encrypted key fails to load instead of OpenSSL asking for
// one on the terminal (its default when no callback is set).
static int no_pass_phrase(char *buffer, int size, int writing, void *context) {
    (void)buffer, (void)size, (void)writing, (void)context;
    return 0;
}

static void *memory(const void *bytes, size_t length) {
    if (length > INT_MAX) return NULL;
    return crypto.bio_new_mem_buf(bytes, (int)length);
}

// OpenSSL's reason for the last failure, into `detail`.
static void say_error(char *detail, size_t size) {
    if (detail == NULL || size == 0) return;
    unsigned long error = crypto.last_error();
    detail[0] = 0;
    if (error != 0) crypto.error_string(error, detail, size);
}

static int64_t seconds(const void *time) {
    struct tm parts;
    memset(&parts, 0, sizeof parts);
    if (time == NULL || crypto.time_to_tm(time, &parts) != 1) return 0;
    return (int64_t)timegm(&parts);
}

int streamup_tls_count_certificates(const void *pem, size_t length) {
    if (!have_crypto()) return -1;
    crypto.clear_errors();
    void *bio = memory(pem, length);
    if (bio == NULL) return 0;
    int count = 0;
    for (;;) {
        void *certificate = crypto.read_certificate(bio, NULL, no_pass_phrase, NULL);
        if (certificate == NULL) break;
        crypto.free_certificate(certificate);
        count += 1;
    }
    crypto.bio_free(bio);
    // The end of the file reads as an error too ("no start line"): not one to keep.
    crypto.clear_errors();
    return count;
}

streamup_tls_identity_check streamup_tls_check_identity(
    const void *certificate_pem, size_t certificate_length, const void *key_pem, size_t key_length, int64_t *valid_from,
    int64_t *valid_until, char *detail, size_t detail_size) {
    if (detail != NULL && detail_size > 0) detail[0] = 0;
    if (!have_crypto()) return streamup_tls_identity_unchecked;
    crypto.clear_errors();
    streamup_tls_identity_check outcome = streamup_tls_identity_ok;
    void *certificate = NULL, *key = NULL;
    void *bio = memory(certificate_pem, certificate_length);
    if (bio != NULL) {
        certificate = crypto.read_certificate(bio, NULL, no_pass_phrase, NULL);
        crypto.bio_free(bio);
    }
    if (certificate == NULL) {
        say_error(detail, detail_size);
        outcome = streamup_tls_identity_no_certificate;
        goto done;
    }
    if (valid_from != NULL) *valid_from = seconds(crypto.not_before(certificate));
    if (valid_until != NULL) *valid_until = seconds(crypto.not_after(certificate));
    bio = memory(key_pem, key_length);
    if (bio != NULL) {
        key = crypto.read_key(bio, NULL, no_pass_phrase, NULL);
        crypto.bio_free(bio);
    }
    if (key == NULL) {
        say_error(detail, detail_size);
        outcome = streamup_tls_identity_no_key;
        goto done;
    }
    if (crypto.check_private_key(certificate, key) != 1) {
        say_error(detail, detail_size);
        outcome = streamup_tls_identity_mismatch;
    }
done:
    if (certificate != NULL) crypto.free_certificate(certificate);
    if (key != NULL) crypto.free_key(key);
    crypto.clear_errors();
    return outcome;
}

#else
int streamup_tls_count_certificates(const void *pem, size_t length) {
    (void)pem, (void)length;
    return -1;
}

streamup_tls_identity_check streamup_tls_check_identity(
    const void *certificate_pem, size_t certificate_length, const void *key_pem, size_t key_length, int64_t *valid_from,
    int64_t *valid_until, char *detail, size_t detail_size) {
    (void)certificate_pem, (void)certificate_length, (void)key_pem, (void)key_length, (void)valid_from, (void)valid_until;
    if (detail != NULL && detail_size > 0) detail[0] = 0;
    return streamup_tls_identity_unchecked;
}
#endif
