#ifndef CSTREAMUPCURL_H
#define CSTREAMUPCURL_H

// Hooks into the system libcurl that FoundationNetworking drives on Linux, for what its API
// cannot say. Each hook defines a libcurl function in this process and calls the real one,
// found with dlsym(RTLD_NEXT, ...). Empty on other platforms.

#include <stddef.h>
#include <stdint.h>

// URL handles this process made with curl_url() (0 when the hook is not in the process).
uint64_t streamup_curl_url_handles_made(void);
// URL handles made with curl_url() and not released yet, by curl_url_cleanup() or by a
// curl_free() that the hook turned into one (swift-corelibs-foundation 6.3's host check
// releases its handle with curl_free, which left the URL's parts allocated on every request).
uint64_t streamup_curl_url_handles_held(void);

// MARK: TLS settings per endpoint (TLSHook.c): curl's --cacert, --capath, --cert, --key

// What came of registering an endpoint's TLS files.
typedef enum {
    streamup_tls_registration_added = 0,
    // The endpoint (scheme, host, port) has other files registered in this process already.
    streamup_tls_registration_other_files = 1,
    // `url` is not an http or https URL.
    streamup_tls_registration_not_a_url = 2,
} streamup_tls_registration;

// Gives every transfer to `url`'s scheme, host and port these files (NULL or empty: not given)
// until as many streamup_tls_unregister() calls as registrations. The files are read now, and
// again at a transfer after they changed on disk.
streamup_tls_registration streamup_tls_register(
    const char *url, const char *ca_certificates, const char *ca_directory, const char *certificate, const char *key);
void streamup_tls_unregister(const char *url);
// The last problem with files that changed on disk for `url`'s endpoint (they were not used),
// into `buffer`; 0 when there is none.
int streamup_tls_problem(const char *url, char *buffer, size_t size);
// `url`'s endpoint as the hook matches it, "scheme://host:port", into `buffer`; -1 when it is
// not an http or https URL.
int streamup_tls_origin(const char *url, char *buffer, size_t size);
// Whether URLSession's transfers in this process go through the hook (a static build, or an
// executable that exports curl_multi_add_handle): without it, registered files are never used.
int streamup_tls_hook_in_effect(void);
// Transfers the hook gave an endpoint's files to, since the process started.
uint64_t streamup_tls_transfers_configured(void);

// Connects to `url` as a transfer would (with its endpoint's registered files), sends nothing,
// and waits at most `wait_milliseconds` for the server to speak: a TLS 1.3 server refuses a
// client certificate with an alert after the handshake, which a transfer that is sending its
// request often loses to the connection's reset (TLSProbe.c). 1: the server sent an alert
// (libcurl's words for it in `detail`); 2: the handshake failed without one (libcurl's
// "OpenSSL SSL_connect: …"); 0: neither; -1: it could not be asked.
int streamup_tls_probe(const char *url, int wait_milliseconds, char *detail, size_t size);

// MARK: PEM checks with the process's libcrypto (TLSFileCheck.c)

typedef enum {
    streamup_tls_identity_ok = 0,
    // No libcrypto in this process: not checked.
    streamup_tls_identity_unchecked = 1,
    streamup_tls_identity_no_certificate = 2,
    // No private key could be read without a pass phrase.
    streamup_tls_identity_no_key = 3,
    // The key does not belong to the certificate.
    streamup_tls_identity_mismatch = 4,
} streamup_tls_identity_check;

// Checks the first certificate of `certificate_pem` and the first private key of `key_pem`;
// the certificate's validity (Unix seconds) into `valid_from` and `valid_until` (each may be
// NULL), OpenSSL's reason for a failure into `detail`.
streamup_tls_identity_check streamup_tls_check_identity(
    const void *certificate_pem, size_t certificate_length, const void *key_pem, size_t key_length, int64_t *valid_from,
    int64_t *valid_until, char *detail, size_t detail_size);
// The certificates OpenSSL reads from `pem` (-1: no libcrypto in this process).
int streamup_tls_count_certificates(const void *pem, size_t length);

#endif
