// Asks a TLS server why it dropped a connection: a handshake of its own, nothing sent, then a
// short wait for what the server says.
//
// Why: a TLS 1.3 server checks the client's certificate after the client has finished its half
// of the handshake, so it refuses one (or the lack of one) with an alert that comes while the
// client is already writing its request. The server closes with that request unread, its
// kernel answers with a reset, and the client's kernel drops the alert: libcurl then reports
// "Send failure: Connection reset by peer" or "Recv failure: …", and only sometimes "SSL_read:
// … alert certificate required" (measured: each about a third of the time against Python's ssl
// with CERT_REQUIRED). On a connection that sends nothing the alert is read every time.
//
// The probe uses libcurl itself (CONNECT_ONLY, then curl_easy_recv), with the endpoint's
// registered files (TLSHook.c) and the same proxy settings as any transfer (libcurl's
// environment variables), so it meets the server as the transfer did.
//
// Thread safety: each call has its own handle and buffers; the functions are looked up once.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"
#include "CurlDeclarations.h"
#include "TLSHook.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

// curl.h, as in CurlDeclarations.h.
enum {
    probe_CURLOPT_URL = 10000 + 2,          // CURLOPT(CURLOPT_URL, CURLOPTTYPE_STRINGPOINT, 2)
    probe_CURLOPT_ERRORBUFFER = 10000 + 10, // CURLOPT(CURLOPT_ERRORBUFFER, CURLOPTTYPE_OBJECTPOINT, 10)
    probe_CURLOPT_NOSIGNAL = 99,            // CURLOPT(CURLOPT_NOSIGNAL, CURLOPTTYPE_LONG, 99)
    probe_CURLOPT_CONNECT_ONLY = 141,       // CURLOPT(CURLOPT_CONNECT_ONLY, CURLOPTTYPE_LONG, 141)
    probe_CURLOPT_TIMEOUT_MS = 155,         // CURLOPT(CURLOPT_TIMEOUT_MS, CURLOPTTYPE_LONG, 155)
    probe_CURLOPT_VERBOSE = 41,             // CURLOPT(CURLOPT_VERBOSE, CURLOPTTYPE_LONG, 41)
    probe_CURLOPT_DEBUGFUNCTION = 20000 + 94, // CURLOPT(CURLOPT_DEBUGFUNCTION, CURLOPTTYPE_FUNCTIONPOINT, 94)
    probe_CURLOPT_DEBUGDATA = 10000 + 95,   // CURLOPT(CURLOPT_DEBUGDATA, CURLOPTTYPE_CBPOINT, 95)
    probe_CURLINFO_TEXT = 0,                // curl_infotype CURLINFO_TEXT
    probe_CURLINFO_ACTIVESOCKET = 0x500000 + 44, // CURLINFO_ACTIVESOCKET = CURLINFO_SOCKET + 44
    probe_CURLE_AGAIN = 81,                 // CURLE_AGAIN
    probe_CURL_ERROR_SIZE = 256,            // #define CURL_ERROR_SIZE 256
};

typedef void *(*easy_init_function)(void);
typedef int (*easy_perform_function)(void *handle);
typedef int (*easy_recv_function)(void *handle, void *buffer, size_t length, size_t *received);

static easy_init_function easy_init;
static easy_perform_function easy_perform;
static easy_recv_function easy_recv;
static su_setopt_function probe_setopt;
static su_getinfo_function probe_getinfo;
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void look_up_probe(void) {
    easy_init = (easy_init_function)dlsym(RTLD_NEXT, "curl_easy_init");
    easy_perform = (easy_perform_function)dlsym(RTLD_NEXT, "curl_easy_perform");
    easy_recv = (easy_recv_function)dlsym(RTLD_NEXT, "curl_easy_recv");
    probe_setopt = (su_setopt_function)dlsym(RTLD_NEXT, "curl_easy_setopt");
    probe_getinfo = (su_getinfo_function)dlsym(RTLD_NEXT, "curl_easy_getinfo");
}

// What libcurl said about the TLS handshake: an alert, or the handshake failing. Its error
// buffer keeps only a transfer's first error (on a connection the server closes, an earlier
// "getpeername() failed"); its debug function gets every one.
struct said {
    char alert[probe_CURL_ERROR_SIZE + 1];
    char handshake[probe_CURL_ERROR_SIZE + 1];
};

static void keep(char *into, size_t size, const char *text, size_t length) {
    while (length > 0 && (text[length - 1] == '\n' || text[length - 1] == '\r' || text[length - 1] == ' ')) length -= 1;
    if (length >= size) length = size - 1;
    memcpy(into, text, length);
    into[length] = 0;
}

static int listen_to_libcurl(void *handle, int type, char *text, size_t length, void *context) {
    (void)handle;
    struct said *said = context;
    if (type != probe_CURLINFO_TEXT) return 0;
    if (memmem(text, length, "alert", 5) != NULL) {
        keep(said->alert, sizeof said->alert, text, length);
    } else if (length > 19 && memcmp(text, "OpenSSL SSL_connect", 19) == 0) {
        keep(said->handshake, sizeof said->handshake, text, length);
    }
    return 0;
}

static long milliseconds_since(const struct timespec *start) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (long)((now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000);
}

int streamup_tls_probe(const char *url, int wait_milliseconds, char *detail, size_t size) {
    if (detail == NULL || size == 0) return -1;
    detail[0] = 0;
    pthread_once(&probe_once, look_up_probe);
    if (easy_init == NULL || easy_perform == NULL || easy_recv == NULL || probe_setopt == NULL || probe_getinfo == NULL) return -1;
    void *handle = easy_init();
    if (handle == NULL) return -1;
    char error[probe_CURL_ERROR_SIZE + 1];
    memset(error, 0, sizeof error);
    probe_setopt(handle, probe_CURLOPT_URL, url);
    probe_setopt(handle, probe_CURLOPT_ERRORBUFFER, error);
    probe_setopt(handle, probe_CURLOPT_NOSIGNAL, 1L);
    probe_setopt(handle, probe_CURLOPT_CONNECT_ONLY, 1L);
    probe_setopt(handle, probe_CURLOPT_TIMEOUT_MS, (long)wait_milliseconds);
    struct said said;
    memset(&said, 0, sizeof said);
    probe_setopt(handle, probe_CURLOPT_VERBOSE, 1L);
    probe_setopt(handle, probe_CURLOPT_DEBUGFUNCTION, listen_to_libcurl);
    probe_setopt(handle, probe_CURLOPT_DEBUGDATA, &said);
    streamup_tls_configure_handle(handle);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int outcome = 0;
    if (easy_perform(handle) != 0) {
        // The handshake itself failed: the server's alert, or libcurl's words for the failure.
        if (said.alert[0] != 0) {
            snprintf(detail, size, "%s", said.alert);
            outcome = 1;
        } else if (said.handshake[0] != 0) {
            snprintf(detail, size, "%s", said.handshake);
            outcome = 2;
        }
    } else {
        int socket = -1;
        if (probe_getinfo(handle, probe_CURLINFO_ACTIVESOCKET, &socket) == 0 && socket >= 0) {
            for (;;) {
                long left = wait_milliseconds - milliseconds_since(&start);
                struct pollfd wait = {.fd = socket, .events = POLLIN};
                if (left <= 0 || poll(&wait, 1, (int)left) <= 0) break;
                char byte[64];
                size_t received = 0;
                int code = easy_recv(handle, byte, sizeof byte, &received);
                if (code == probe_CURLE_AGAIN) continue;
                if (code != 0) {
                    snprintf(detail, size, "%s", said.alert[0] != 0 ? said.alert : error);
                    outcome = 1;
                }
                // Bytes (a server that speaks first) or the end: no alert to report.
                break;
            }
        }
    }
    curl_easy_cleanup(handle);
    return outcome;
}

#else
int streamup_tls_probe(const char *url, int wait_milliseconds, char *detail, size_t size) {
    (void)url, (void)wait_milliseconds;
    if (detail != NULL && size > 0) detail[0] = 0;
    return -1;
}
#endif
