#ifndef CSTREAMUPCURL_H
#define CSTREAMUPCURL_H

// Hooks into the system libcurl that FoundationNetworking drives on Linux, for what its API
// cannot say. Each hook defines a libcurl function in this process and calls the real one,
// found with dlsym(RTLD_NEXT, ...). Empty on other platforms.

#include <stdint.h>

// URL handles this process made with curl_url() (0 when the hook is not in the process).
uint64_t streamup_curl_url_handles_made(void);
// URL handles made with curl_url() and not released yet, by curl_url_cleanup() or by a
// curl_free() that the hook turned into one (swift-corelibs-foundation 6.3's host check
// releases its handle with curl_free, which left the URL's parts allocated on every request).
uint64_t streamup_curl_url_handles_held(void);

#endif
