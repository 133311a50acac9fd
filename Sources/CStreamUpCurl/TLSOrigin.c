// The endpoint a libcurl handle's URL names, as the TLS hook matches registered endpoints:
// scheme, host and port (TLSHook.c).
//
// Thread safety: stateless; callable from any thread.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"

#if defined(__linux__)
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// `url`'s scheme, host and port as "scheme://host:port" into `buffer`: the scheme and host in
// lower case, a percent-encoded host decoded (SessionURL spells IPv6 literals so), an IPv6
// address in brackets in the form inet_ntop writes, the scheme's port when the URL names none.
int streamup_tls_origin(const char *url, char *buffer, size_t size) {
    if (url == NULL || buffer == NULL || size == 0) return -1;
    const char *separator = strstr(url, "://");
    if (separator == NULL) return -1;
    char scheme[8];
    size_t scheme_length = (size_t)(separator - url);
    if (scheme_length == 0 || scheme_length >= sizeof scheme) return -1;
    for (size_t index = 0; index < scheme_length; index++) scheme[index] = (char)tolower((unsigned char)url[index]);
    scheme[scheme_length] = 0;
    int default_port;
    if (strcmp(scheme, "https") == 0) {
        default_port = 443;
    } else if (strcmp(scheme, "http") == 0) {
        default_port = 80;
    } else {
        return -1;
    }
    const char *authority = separator + 3;
    size_t authority_length = strcspn(authority, "/?#");
    // Without user information: after the last '@'.
    for (size_t index = authority_length; index > 0; index--) {
        if (authority[index - 1] == '@') {
            authority += index;
            authority_length -= index;
            break;
        }
    }
    char decoded[300];
    size_t length = 0;
    for (size_t index = 0; index < authority_length; index++) {
        if (length + 1 >= sizeof decoded) return -1;
        char character = authority[index];
        if (character == '%' && index + 2 < authority_length && isxdigit((unsigned char)authority[index + 1])
            && isxdigit((unsigned char)authority[index + 2])) {
            char hex[3] = {authority[index + 1], authority[index + 2], 0};
            character = (char)strtol(hex, NULL, 16);
            index += 2;
        }
        decoded[length++] = (char)tolower((unsigned char)character);
    }
    decoded[length] = 0;
    char host[300];
    const char *port_text = NULL;
    if (decoded[0] == '[') {
        char *close = strchr(decoded, ']');
        if (close == NULL) return -1;
        *close = 0;
        struct in6_addr address;
        char canonical[INET6_ADDRSTRLEN];
        if (inet_pton(AF_INET6, decoded + 1, &address) == 1 && inet_ntop(AF_INET6, &address, canonical, sizeof canonical) != NULL) {
            snprintf(host, sizeof host, "[%s]", canonical);
        } else {
            snprintf(host, sizeof host, "[%s]", decoded + 1);
        }
        if (close[1] == ':') port_text = close + 2;
    } else {
        char *colon = strrchr(decoded, ':');
        if (colon != NULL) {
            *colon = 0;
            port_text = colon + 1;
        }
        snprintf(host, sizeof host, "%s", decoded);
    }
    if (host[0] == 0) return -1;
    long port = default_port;
    if (port_text != NULL && port_text[0] != 0) {
        char *end = NULL;
        port = strtol(port_text, &end, 10);
        if (end == NULL || *end != 0 || port < 1 || port > 65535) return -1;
    }
    int written = snprintf(buffer, size, "%s://%s:%ld", scheme, host, port);
    return written > 0 && (size_t)written < size ? 0 : -1;
}

#else
int streamup_tls_origin(const char *url, char *buffer, size_t size) {
    (void)url, (void)buffer, (void)size;
    return -1;
}
#endif
