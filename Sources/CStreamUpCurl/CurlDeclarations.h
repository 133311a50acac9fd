#ifndef CSTREAMUPCURL_DECLARATIONS_H
#define CSTREAMUPCURL_DECLARATIONS_H

// The few libcurl declarations the hooks use, written out here so that the build needs no
// libcurl headers (README's set-up installs only zlib's). Each value is curl.h's, from the
// libcurl these hooks were written against (7.88.1, Debian 12); libcurl never renumbers an
// option or an info, so later versions keep them. Internal to this target.

#include <stddef.h>

// curl.h: #define CURLOPTTYPE_LONG 0, CURLOPTTYPE_OBJECTPOINT 10000 (CURLOPTTYPE_STRINGPOINT is
// the same), CURLOPTTYPE_BLOB 40000; each option is its type's base plus its number.
enum {
    su_CURLOPT_KEYPASSWD = 10000 + 26,     // CURLOPT(CURLOPT_KEYPASSWD, CURLOPTTYPE_STRINGPOINT, 26)
    su_CURLOPT_SSLCERTTYPE = 10000 + 86,   // CURLOPT(CURLOPT_SSLCERTTYPE, CURLOPTTYPE_STRINGPOINT, 86)
    su_CURLOPT_SSLKEYTYPE = 10000 + 88,    // CURLOPT(CURLOPT_SSLKEYTYPE, CURLOPTTYPE_STRINGPOINT, 88)
    su_CURLOPT_CAPATH = 10000 + 97,        // CURLOPT(CURLOPT_CAPATH, CURLOPTTYPE_STRINGPOINT, 97)
    su_CURLOPT_SSLCERT_BLOB = 40000 + 291, // CURLOPT(CURLOPT_SSLCERT_BLOB, CURLOPTTYPE_BLOB, 291), 7.71.0
    su_CURLOPT_SSLKEY_BLOB = 40000 + 292,  // CURLOPT(CURLOPT_SSLKEY_BLOB, CURLOPTTYPE_BLOB, 292), 7.71.0
    su_CURLOPT_CAINFO_BLOB = 40000 + 309,  // CURLOPT(CURLOPT_CAINFO_BLOB, CURLOPTTYPE_BLOB, 309), 7.77.0
};

// curl.h: #define CURLINFO_STRING 0x100000.
enum {
    su_CURLINFO_EFFECTIVE_URL = 0x100000 + 1, // CURLINFO_EFFECTIVE_URL = CURLINFO_STRING + 1
    su_CURLINFO_CAPATH = 0x100000 + 62,       // CURLINFO_CAPATH = CURLINFO_STRING + 62, 7.84.0
};

// easy.h: struct curl_blob and #define CURL_BLOB_COPY 1 (libcurl copies the bytes).
struct su_curl_blob {
    void *data;
    size_t len;
    unsigned int flags;
};
enum { su_CURL_BLOB_COPY = 1 };

// multi.h: CURLM_INTERNAL_ERROR (4), what the hook answers when the real function is missing.
enum { su_CURLM_INTERNAL_ERROR = 4 };

// easy.h: CURLcode curl_easy_setopt(CURL *, CURLoption, ...) and curl_easy_getinfo(CURL *, CURLINFO, ...);
// multi.h: CURLMcode curl_multi_add_handle(CURLM *, CURL *); easy.h: void curl_easy_cleanup(CURL *).
typedef int (*su_setopt_function)(void *handle, int option, ...);
typedef int (*su_getinfo_function)(void *handle, int info, ...);
typedef int (*su_multi_add_function)(void *multi, void *handle);
typedef void (*su_easy_cleanup_function)(void *handle);

#endif
