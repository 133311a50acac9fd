#ifndef CSTREAMUPCURL_TLS_HOOK_H
#define CSTREAMUPCURL_TLS_HOOK_H

// Between TLSHook.c, TLSFileSet.c and TLSProbe.c; internal to this target.

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

// MARK: An endpoint's files, as read (TLSFileSet.c)

enum { ca_file = 0, certificate_file = 1, key_file = 2, file_count = 3 };

struct file_identity {
    dev_t device;
    ino_t inode;
    off_t size;
    struct timespec modified;
    struct timespec changed;
    int present;
};

// The files' bytes and the identities they were read at; immutable once made.
struct file_set {
    int references;
    struct file_identity identities[file_count];
    char *bytes[file_count];
    size_t lengths[file_count];
};

// Whether two identities are the same file, unchanged.
int streamup_tls_same_identity(const struct file_identity *one, const struct file_identity *other);
// The identity of the file at `path` now (not present: it cannot be found).
void streamup_tls_identify(const char *path, struct file_identity *identity);
// Reads the files of `paths` (NULL: not given), stamped with `identities`; NULL when one given
// cannot be read. The caller holds the one reference.
struct file_set *streamup_tls_read_set(char *const paths[file_count], const struct file_identity identities[file_count]);
void streamup_tls_release_set(struct file_set *set);
// Whether a set read after a change holds together (CA certificates that parse, a key that is
// the certificate's); else why not, into `problem`.
int streamup_tls_holds_together(char *const paths[file_count], const struct file_set *set, char *problem, size_t size);

// MARK: The hook (TLSHook.c)

// Gives the easy `handle` the files of the registered endpoint its URL names (as the
// curl_multi_add_handle hook does for every transfer); nothing for another URL.
void streamup_tls_configure_handle(void *handle);

// The hook on libcurl's curl_easy_cleanup (TLSHook.c), which forgets the handle.
void curl_easy_cleanup(void *handle);

#endif
