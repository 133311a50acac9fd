// An endpoint's TLS files as the hook reads them (TLSHook.c): each file's identity on disk, to
// tell when it changed, its bytes, and whether a set read after a change holds together.
//
// Thread safety: a file set is immutable once made; the functions keep no state.

#define _GNU_SOURCE
#include "CStreamUpCurl.h"
#include "TLSHook.h"

#if defined(__linux__)
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int streamup_tls_same_identity(const struct file_identity *one, const struct file_identity *other) {
    return one->present == other->present && one->device == other->device && one->inode == other->inode && one->size == other->size
        && one->modified.tv_sec == other->modified.tv_sec && one->modified.tv_nsec == other->modified.tv_nsec
        && one->changed.tv_sec == other->changed.tv_sec && one->changed.tv_nsec == other->changed.tv_nsec;
}

void streamup_tls_identify(const char *path, struct file_identity *identity) {
    memset(identity, 0, sizeof *identity);
    struct stat status;
    if (path == NULL || stat(path, &status) != 0) return;
    identity->present = 1;
    identity->device = status.st_dev;
    identity->inode = status.st_ino;
    identity->size = status.st_size;
    identity->modified = status.st_mtim;
    identity->changed = status.st_ctim;
}

// The whole file, or NULL. A certificate file is small: at most 4 MiB is read.
static char *read_whole(const char *path, size_t *length) {
    int descriptor = open(path, O_RDONLY | O_CLOEXEC);
    if (descriptor < 0) return NULL;
    size_t capacity = 16384, used = 0;
    char *bytes = malloc(capacity);
    while (bytes != NULL) {
        if (used == capacity) {
            if (capacity >= (4u << 20)) break;
            char *larger = realloc(bytes, capacity * 2);
            if (larger == NULL) break;
            bytes = larger;
            capacity *= 2;
        }
        ssize_t count = read(descriptor, bytes + used, capacity - used);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0) {
            free(bytes);
            bytes = NULL;
            break;
        }
        if (count == 0) {
            close(descriptor);
            *length = used;
            return bytes;
        }
        used += (size_t)count;
    }
    free(bytes);
    close(descriptor);
    return NULL;
}

void streamup_tls_release_set(struct file_set *set) {
    if (set == NULL) return;
    for (int index = 0; index < file_count; index++) free(set->bytes[index]);
    free(set);
}

// Reads the files whose identities are `identities`; NULL when one given cannot be read.
struct file_set *streamup_tls_read_set(char *const paths[file_count], const struct file_identity identities[file_count]) {
    struct file_set *set = calloc(1, sizeof *set);
    if (set == NULL) return NULL;
    set->references = 1;
    for (int index = 0; index < file_count; index++) {
        set->identities[index] = identities[index];
        if (paths[index] == NULL) continue;
        set->bytes[index] = read_whole(paths[index], &set->lengths[index]);
        if (set->bytes[index] == NULL) {
            streamup_tls_release_set(set);
            return NULL;
        }
    }
    return set;
}

// Whether a set read after a change holds together; else why not, into `problem`.
int streamup_tls_holds_together(char *const paths[file_count], const struct file_set *set, char *problem, size_t size) {
    if (set->bytes[ca_file] != NULL && streamup_tls_count_certificates(set->bytes[ca_file], set->lengths[ca_file]) == 0) {
        snprintf(problem, size, "%s holds no PEM certificate", paths[ca_file]);
        return 0;
    }
    if (set->bytes[certificate_file] == NULL) return 1;
    const char *key = set->bytes[key_file] != NULL ? set->bytes[key_file] : set->bytes[certificate_file];
    size_t key_length = set->bytes[key_file] != NULL ? set->lengths[key_file] : set->lengths[certificate_file];
    char detail[200];
    switch (streamup_tls_check_identity(set->bytes[certificate_file], set->lengths[certificate_file], key, key_length, NULL, NULL, detail, sizeof detail)) {
    case streamup_tls_identity_ok:
    case streamup_tls_identity_unchecked:
        return 1;
    case streamup_tls_identity_no_certificate:
        snprintf(problem, size, "%s holds no PEM certificate (%s)", paths[certificate_file], detail);
        return 0;
    case streamup_tls_identity_no_key:
        snprintf(problem, size, "%s holds no unencrypted PEM private key (%s)", paths[key_file] ? paths[key_file] : paths[certificate_file], detail);
        return 0;
    case streamup_tls_identity_mismatch:
        snprintf(problem, size, "the key in %s does not belong to the certificate in %s", paths[key_file] ? paths[key_file] : paths[certificate_file], paths[certificate_file]);
        return 0;
    }
    return 1;
}

#endif
