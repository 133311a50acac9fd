// swift-corelibs-foundation (Swift 6.3.1) checks every request's host with
// CFURLSessionCurlHostIsEqual: it makes a URL handle with curl_url(), parses the request's URL
// into it, and releases it with curl_free() instead of curl_url_cleanup(). The handle's struct
// goes, its parts (scheme, host, path, query, each a strdup) stay: about 150 bytes of resident
// memory per request, in every URLSession program (later corelibs call curl_url_cleanup).
// An agent sending twenty requests a second loses gigabytes a month to it.
//
// The mend: curl_url() is defined here; it records the handle it returns (from libcurl's own
// curl_url) in a small table. curl_free() is defined here too: a pointer in the table is a URL
// handle, released whole with curl_url_cleanup(); any other pointer goes to libcurl's curl_free.
// curl_url_cleanup() is passed through, forgetting its handle, so
// the table never holds a freed pointer (a handle made by curl_url_dup is never recorded). A handle that finds the table full is not recorded and
// is released as before. Each call takes one uncontended mutex.
//
// Thread safety: the table is guarded by `table_lock`; the real functions are looked up once.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

// Kept through the linker's garbage collection and exported: nothing in the program calls these
// by name; libcurl's callers in FoundationNetworking reach them through the dynamic linker.
#define HOOK __attribute__((used, retain, visibility("default")))

typedef void *(*url_make_function)(void);
typedef void (*release_function)(void *);

static url_make_function real_curl_url;
static release_function real_curl_url_cleanup;
static release_function real_curl_free;
static pthread_once_t lookup_once = PTHREAD_ONCE_INIT;

enum { table_size = 64 };
static void *table[table_size];
static pthread_mutex_t table_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t made;

static void look_up(void) {
    real_curl_url = (url_make_function)dlsym(RTLD_NEXT, "curl_url");
    real_curl_url_cleanup = (release_function)dlsym(RTLD_NEXT, "curl_url_cleanup");
    real_curl_free = (release_function)dlsym(RTLD_NEXT, "curl_free");
}

/// Removes `pointer` from the table; whether it was there.
static int forget(void *pointer) {
    int found = 0;
    pthread_mutex_lock(&table_lock);
    for (int index = 0; index < table_size; index++) {
        if (table[index] == pointer) {
            table[index] = NULL;
            found = 1;
            break;
        }
    }
    pthread_mutex_unlock(&table_lock);
    return found;
}

HOOK void *curl_url(void) {
    pthread_once(&lookup_once, look_up);
    if (real_curl_url == NULL) return NULL;
    void *handle = real_curl_url();
    if (handle == NULL) return NULL;
    pthread_mutex_lock(&table_lock);
    made += 1;
    for (int index = 0; index < table_size; index++) {
        if (table[index] == NULL) {
            table[index] = handle;
            break;
        }
    }
    pthread_mutex_unlock(&table_lock);
    return handle;
}

HOOK void curl_url_cleanup(void *handle) {
    pthread_once(&lookup_once, look_up);
    if (handle != NULL) forget(handle);
    if (real_curl_url_cleanup != NULL) real_curl_url_cleanup(handle);
}

HOOK void curl_free(void *pointer) {
    pthread_once(&lookup_once, look_up);
    if (pointer != NULL && forget(pointer) && real_curl_url_cleanup != NULL) {
        real_curl_url_cleanup(pointer);
        return;
    }
    if (real_curl_free != NULL) real_curl_free(pointer);
}

uint64_t streamup_curl_url_handles_made(void) {
    pthread_mutex_lock(&table_lock);
    uint64_t count = made;
    pthread_mutex_unlock(&table_lock);
    return count;
}

uint64_t streamup_curl_url_handles_held(void) {
    uint64_t count = 0;
    pthread_mutex_lock(&table_lock);
    for (int index = 0; index < table_size; index++) {
        if (table[index] != NULL) count += 1;
    }
    pthread_mutex_unlock(&table_lock);
    return count;
}

#else
uint64_t streamup_curl_url_handles_made(void) { return 0; }
uint64_t streamup_curl_url_handles_held(void) { return 0; }
#endif
