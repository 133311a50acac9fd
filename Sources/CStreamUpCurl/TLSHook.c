// curl's --cacert, --capath, --cert and --key for URLSession on Linux, which has no API for
// them: swift-corelibs-foundation sets no CA file (except on Android), evaluates no server
// trust and sends no client certificate. It drives the system libcurl, though, and starts
// every transfer with curl_multi_add_handle() once it has set the handle's options. That
// function is defined here: for a transfer to an endpoint the app registered (same scheme,
// host and port as the handle's URL), it adds the endpoint's CA certificates, CA directory,
// client certificate and key to the handle, then calls libcurl's own (dlsym(RTLD_NEXT, ...)).
// Every other transfer goes through untouched: the hook sees all of the process's URLSession
// transfers, the app's own too.
//
// The certificates go to libcurl as blobs (CURLOPT_CAINFO_BLOB, SSLCERT_BLOB, SSLKEY_BLOB), read
// here, not as file names, for rotation (cert-manager, short-lived certificates): libcurl reuses
// a live connection, and resumes a TLS session, only when the new transfer's TLS settings equal
// the connection's, and it compares file names by their text but blobs by their bytes. So a
// certificate changed on disk makes the next transfer open a new connection with it, while
// unchanged files keep reusing connections. Each transfer stats the files (a few microseconds);
// a file whose identity (device, inode, size, modification and change times) changed is read
// again, and the new set is used only once it holds together (CA certificates that parse, a key
// that belongs to its certificate, checked with libcrypto as TLSFileCheck.c does): a pair
// caught half-written, the certificate before its key, leaves the last good set in use, and
// the problem is kept for the failure's line. A CA directory (--capath) goes as its name:
// OpenSSL looks certificates up there at each connection.
//
// A handle that got an endpoint's settings and is added again for another URL (URLSession
// follows a redirect on the same handle) has them taken off first, so a client certificate
// never goes to another server. curl_easy_cleanup() is defined here too, to forget the handle.
//
// Thread safety: the registry, the set of handles that carry settings and each endpoint's current
// files are guarded by `registry_lock`; nothing is read, checked or called while holding it.
// Endpoints and file sets are reference-counted and freed after the lock is released.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"
#include "CurlDeclarations.h"
#include "TLSHook.h"

#if defined(__linux__)
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HOOK __attribute__((used, retain, visibility("default")))

// MARK: libcurl's functions

static su_multi_add_function real_multi_add;
static su_easy_cleanup_function real_easy_cleanup;
static su_setopt_function setopt;
static su_getinfo_function getinfo;
static pthread_once_t curl_once = PTHREAD_ONCE_INIT;

static void look_up_curl(void) {
    real_multi_add = (su_multi_add_function)dlsym(RTLD_NEXT, "curl_multi_add_handle");
    real_easy_cleanup = (su_easy_cleanup_function)dlsym(RTLD_NEXT, "curl_easy_cleanup");
    setopt = (su_setopt_function)dlsym(RTLD_NEXT, "curl_easy_setopt");
    getinfo = (su_getinfo_function)dlsym(RTLD_NEXT, "curl_easy_getinfo");
}

// MARK: Registered endpoints

struct endpoint {
    struct endpoint *next;
    char *origin;
    // The paths as registered (NULL: not given); never change.
    char *paths[file_count];
    char *ca_directory;
    int registrations;
    int references;
    int removed;
    struct file_set *current;
    // The identities a changed set was last read at, when it did not hold together.
    struct file_identity refused[file_count];
    int has_refused;
    char problem[400];
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct endpoint *endpoints;
static atomic_int endpoint_count;
static void **marked;
static size_t marked_count, marked_capacity;
static atomic_size_t marked_total;
static atomic_uint_fast64_t configured_transfers;

static struct endpoint *find_endpoint(const char *origin) {
    for (struct endpoint *endpoint = endpoints; endpoint != NULL; endpoint = endpoint->next) {
        if (!endpoint->removed && strcmp(endpoint->origin, origin) == 0) return endpoint;
    }
    return NULL;
}

static void free_endpoint(struct endpoint *endpoint) {
    if (endpoint == NULL) return;
    free(endpoint->origin);
    for (int index = 0; index < file_count; index++) free(endpoint->paths[index]);
    free(endpoint->ca_directory);
    free(endpoint);
}

// Drops a reference to `set` and one to `endpoint`; what is left unreferenced is handed back,
// to be freed after unlocking. Called with the lock held.
static void unreference_locked(struct endpoint *endpoint, struct file_set *set, struct endpoint **endpoint_to_free, struct file_set **sets_to_free) {
    sets_to_free[0] = sets_to_free[1] = NULL;
    *endpoint_to_free = NULL;
    if (set != NULL && --set->references == 0) sets_to_free[0] = set;
    if (endpoint == NULL || --endpoint->references > 0) return;
    // The last reference goes only after the last registration: the endpoint is out of the list.
    *endpoint_to_free = endpoint;
    if (endpoint->current != NULL && --endpoint->current->references == 0) sets_to_free[1] = endpoint->current;
    endpoint->current = NULL;
}

// The file set to use for `endpoint` now: its current one, or the files read again when they
// changed on disk and hold together. Returns a set the caller holds a reference to.
static struct file_set *refresh(struct endpoint *endpoint, struct file_set *held) {
    struct file_identity now[file_count];
    for (int index = 0; index < file_count; index++) streamup_tls_identify(endpoint->paths[index], &now[index]);
    int changed = held == NULL;
    for (int index = 0; index < file_count && !changed; index++) changed = !streamup_tls_same_identity(&now[index], &held->identities[index]);
    if (!changed) return held;
    pthread_mutex_lock(&registry_lock);
    int known_refused = endpoint->has_refused;
    for (int index = 0; index < file_count && known_refused; index++) known_refused = streamup_tls_same_identity(&now[index], &endpoint->refused[index]);
    pthread_mutex_unlock(&registry_lock);
    if (known_refused && held != NULL) return held;
    struct file_set *fresh = streamup_tls_read_set(endpoint->paths, now);
    char problem[sizeof endpoint->problem] = "";
    if (fresh == NULL) {
        snprintf(problem, sizeof problem, "a file changed on disk cannot be read");
    } else if (held != NULL && !streamup_tls_holds_together(endpoint->paths, fresh, problem, sizeof problem)) {
        streamup_tls_release_set(fresh);
        fresh = NULL;
    }
    struct file_set *to_free = NULL;
    pthread_mutex_lock(&registry_lock);
    if (fresh == NULL) {
        memcpy(endpoint->refused, now, sizeof now);
        endpoint->has_refused = 1;
        snprintf(endpoint->problem, sizeof endpoint->problem, "%s; the files read before stay in use", problem);
    } else {
        if (endpoint->current != NULL && --endpoint->current->references == 0) to_free = endpoint->current;
        endpoint->current = fresh;
        fresh->references += 1;
        endpoint->has_refused = 0;
        endpoint->problem[0] = 0;
    }
    struct file_set *result = fresh != NULL ? fresh : held;
    struct file_set *dropped = NULL;
    if (fresh != NULL && held != NULL && --held->references == 0) dropped = held;
    pthread_mutex_unlock(&registry_lock);
    streamup_tls_release_set(to_free);
    streamup_tls_release_set(dropped);
    return result;
}

// MARK: Handles that carry an endpoint's settings

// Called with the lock held.
static int mark_locked(void *handle) {
    for (size_t index = 0; index < marked_count; index++) {
        if (marked[index] == handle) return 1;
    }
    if (marked_count == marked_capacity) {
        size_t capacity = marked_capacity == 0 ? 16 : marked_capacity * 2;
        void **larger = realloc(marked, capacity * sizeof *marked);
        if (larger == NULL) return 0;
        marked = larger;
        marked_capacity = capacity;
    }
    marked[marked_count++] = handle;
    atomic_store(&marked_total, marked_count);
    return 1;
}

// Whether `handle` was marked; unmarks it. Called with the lock held.
static int unmark_locked(void *handle) {
    for (size_t index = 0; index < marked_count; index++) {
        if (marked[index] == handle) {
            marked[index] = marked[--marked_count];
            atomic_store(&marked_total, marked_count);
            return 1;
        }
    }
    return 0;
}

static void set_blob(void *handle, int option, char *bytes, size_t length) {
    struct su_curl_blob blob = {bytes, length, su_CURL_BLOB_COPY};
    setopt(handle, option, bytes == NULL ? NULL : &blob);
}

// Gives `handle` the endpoint's files as `set` read them. Without a set (the files could not
// be read since they were registered) the blobs are empty: libcurl fails the transfer at its
// connection, and the endpoint's problem says why.
static void apply(void *handle, const struct endpoint *endpoint, const struct file_set *set) {
    static char nothing[1];
    if (endpoint->paths[ca_file] != NULL) {
        set_blob(handle, su_CURLOPT_CAINFO_BLOB, set != NULL ? set->bytes[ca_file] : nothing, set != NULL ? set->lengths[ca_file] : 0);
    }
    if (endpoint->ca_directory != NULL) setopt(handle, su_CURLOPT_CAPATH, endpoint->ca_directory);
    if (endpoint->paths[certificate_file] == NULL) return;
    // The key is in the certificate's file when no key file is given (as curl takes --cert).
    int key = endpoint->paths[key_file] != NULL ? key_file : certificate_file;
    setopt(handle, su_CURLOPT_SSLCERTTYPE, "PEM");
    setopt(handle, su_CURLOPT_SSLKEYTYPE, "PEM");
    // An encrypted key fails at the connection instead of OpenSSL asking on a terminal.
    setopt(handle, su_CURLOPT_KEYPASSWD, "");
    set_blob(handle, su_CURLOPT_SSLCERT_BLOB, set != NULL ? set->bytes[certificate_file] : nothing, set != NULL ? set->lengths[certificate_file] : 0);
    set_blob(handle, su_CURLOPT_SSLKEY_BLOB, set != NULL ? set->bytes[key] : nothing, set != NULL ? set->lengths[key] : 0);
}

// Takes off what `apply` set: libcurl's defaults again.
static void take_off(void *handle) {
    set_blob(handle, su_CURLOPT_CAINFO_BLOB, NULL, 0);
    set_blob(handle, su_CURLOPT_SSLCERT_BLOB, NULL, 0);
    set_blob(handle, su_CURLOPT_SSLKEY_BLOB, NULL, 0);
    setopt(handle, su_CURLOPT_KEYPASSWD, NULL);
    // The CA directory libcurl was built with (Debian: /etc/ssl/certs), or none.
    char *default_directory = NULL;
    if (getinfo(handle, su_CURLINFO_CAPATH, &default_directory) != 0) default_directory = NULL;
    setopt(handle, su_CURLOPT_CAPATH, default_directory);
}

// MARK: The hooks

// Gives `handle` the files of the endpoint its URL names, if one is registered; takes them off
// a handle that carried them and now goes elsewhere.
void streamup_tls_configure_handle(void *handle) {
    pthread_once(&curl_once, look_up_curl);
    if (setopt == NULL || getinfo == NULL || (atomic_load(&endpoint_count) == 0 && atomic_load(&marked_total) == 0)) return;
    // The URL CURLOPT_URL set (libcurl's getinfo answers it before the transfer starts).
    char *url = NULL;
    char origin[340];
    int known = getinfo(handle, su_CURLINFO_EFFECTIVE_URL, &url) == 0 && streamup_tls_origin(url, origin, sizeof origin) == 0;
    pthread_mutex_lock(&registry_lock);
    struct endpoint *endpoint = known ? find_endpoint(origin) : NULL;
    struct file_set *set = NULL;
    int carried = 0;
    if (endpoint != NULL) {
        endpoint->references += 1;
        set = endpoint->current;
        if (set != NULL) set->references += 1;
        mark_locked(handle);
    } else {
        carried = unmark_locked(handle);
    }
    pthread_mutex_unlock(&registry_lock);
    if (endpoint == NULL) {
        if (carried) take_off(handle);
        return;
    }
    set = refresh(endpoint, set);
    apply(handle, endpoint, set);
    atomic_fetch_add(&configured_transfers, 1);
    struct endpoint *endpoint_to_free = NULL;
    struct file_set *sets_to_free[2];
    pthread_mutex_lock(&registry_lock);
    unreference_locked(endpoint, set, &endpoint_to_free, sets_to_free);
    pthread_mutex_unlock(&registry_lock);
    streamup_tls_release_set(sets_to_free[0]);
    streamup_tls_release_set(sets_to_free[1]);
    free_endpoint(endpoint_to_free);
}

HOOK int curl_multi_add_handle(void *multi, void *handle) {
    pthread_once(&curl_once, look_up_curl);
    if (real_multi_add == NULL) return su_CURLM_INTERNAL_ERROR;
    streamup_tls_configure_handle(handle);
    return real_multi_add(multi, handle);
}

HOOK void curl_easy_cleanup(void *handle) {
    pthread_once(&curl_once, look_up_curl);
    if (handle != NULL && atomic_load(&marked_total) > 0) {
        pthread_mutex_lock(&registry_lock);
        unmark_locked(handle);
        pthread_mutex_unlock(&registry_lock);
    }
    if (real_easy_cleanup != NULL) real_easy_cleanup(handle);
}

// MARK: Registration from Swift

static char *copy(const char *text) { return text == NULL || text[0] == 0 ? NULL : strdup(text); }

static int same_path(const char *one, const char *other) {
    if (one == NULL || other == NULL) return one == other;
    return strcmp(one, other) == 0;
}

streamup_tls_registration streamup_tls_register(
    const char *url, const char *ca_certificates, const char *ca_directory, const char *certificate, const char *key) {
    char origin[340];
    if (streamup_tls_origin(url, origin, sizeof origin) != 0) return streamup_tls_registration_not_a_url;
    struct endpoint *fresh = calloc(1, sizeof *fresh);
    if (fresh == NULL) return streamup_tls_registration_not_a_url;
    fresh->origin = strdup(origin);
    fresh->paths[ca_file] = copy(ca_certificates);
    fresh->paths[certificate_file] = copy(certificate);
    fresh->paths[key_file] = copy(key);
    fresh->ca_directory = copy(ca_directory);
    fresh->registrations = 1;
    fresh->references = 1;
    // The files as they are now (TLSFiles checked them just before).
    struct file_identity identities[file_count];
    for (int index = 0; index < file_count; index++) streamup_tls_identify(fresh->paths[index], &identities[index]);
    fresh->current = streamup_tls_read_set(fresh->paths, identities);
    streamup_tls_registration outcome = streamup_tls_registration_added;
    pthread_mutex_lock(&registry_lock);
    struct endpoint *existing = find_endpoint(origin);
    if (existing != NULL) {
        int same = same_path(existing->ca_directory, fresh->ca_directory);
        for (int index = 0; index < file_count && same; index++) same = same_path(existing->paths[index], fresh->paths[index]);
        if (same) {
            existing->registrations += 1;
        } else {
            outcome = streamup_tls_registration_other_files;
        }
    } else {
        fresh->next = endpoints;
        endpoints = fresh;
        atomic_fetch_add(&endpoint_count, 1);
        fresh = NULL;
    }
    pthread_mutex_unlock(&registry_lock);
    if (fresh != NULL) {
        streamup_tls_release_set(fresh->current);
        free_endpoint(fresh);
    }
    return outcome;
}

void streamup_tls_unregister(const char *url) {
    char origin[340];
    if (streamup_tls_origin(url, origin, sizeof origin) != 0) return;
    struct endpoint *to_free = NULL;
    struct file_set *sets_to_free[2] = {NULL, NULL};
    pthread_mutex_lock(&registry_lock);
    struct endpoint *endpoint = find_endpoint(origin);
    if (endpoint != NULL && --endpoint->registrations == 0) {
        for (struct endpoint **link = &endpoints; *link != NULL; link = &(*link)->next) {
            if (*link == endpoint) {
                *link = endpoint->next;
                break;
            }
        }
        endpoint->removed = 1;
        atomic_fetch_sub(&endpoint_count, 1);
        // The registry's own reference; a transfer being started may hold another.
        unreference_locked(endpoint, NULL, &to_free, sets_to_free);
    }
    pthread_mutex_unlock(&registry_lock);
    streamup_tls_release_set(sets_to_free[1]);
    free_endpoint(to_free);
}

int streamup_tls_problem(const char *url, char *buffer, size_t size) {
    char origin[340];
    if (buffer == NULL || size == 0 || streamup_tls_origin(url, origin, sizeof origin) != 0) return 0;
    buffer[0] = 0;
    pthread_mutex_lock(&registry_lock);
    struct endpoint *endpoint = find_endpoint(origin);
    if (endpoint != NULL) snprintf(buffer, size, "%s", endpoint->problem);
    pthread_mutex_unlock(&registry_lock);
    return buffer[0] != 0;
}

int streamup_tls_hook_in_effect(void) {
    // Foundation linked into the executable (a static build) calls this definition; one loaded
    // as a shared library calls whichever definition the dynamic linker finds first.
    void *networking = dlopen("libFoundationNetworking.so", RTLD_NOW | RTLD_NOLOAD);
    if (networking == NULL) return 1;
    dlclose(networking);
    return dlsym(RTLD_DEFAULT, "curl_multi_add_handle") == (void *)curl_multi_add_handle;
}

uint64_t streamup_tls_transfers_configured(void) { return atomic_load(&configured_transfers); }

#else
streamup_tls_registration streamup_tls_register(
    const char *url, const char *ca_certificates, const char *ca_directory, const char *certificate, const char *key) {
    (void)url, (void)ca_certificates, (void)ca_directory, (void)certificate, (void)key;
    return streamup_tls_registration_added;
}
void streamup_tls_unregister(const char *url) { (void)url; }
int streamup_tls_problem(const char *url, char *buffer, size_t size) {
    (void)url;
    if (buffer != NULL && size > 0) buffer[0] = 0;
    return 0;
}
int streamup_tls_hook_in_effect(void) { return 0; }
uint64_t streamup_tls_transfers_configured(void) { return 0; }
#endif
