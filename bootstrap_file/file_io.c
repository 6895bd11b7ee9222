/* Files in a shared directory: O_NOFOLLOW opens, fstat checks, atomic publishing. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

int hidet_nccl__bf_check_dir(const char *dir, char *why, size_t why_bytes) {
    struct stat st;
    if (stat(dir, &st) != 0) return WHY("rendezvous directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return WHY("rendezvous directory %s is not a directory", dir);
    if ((st.st_mode & (S_IWOTH | S_IWGRP)) && !(st.st_mode & S_ISVTX))
        return WHY("rendezvous directory %s is writable by %s without the sticky bit (mode %04o): another user "
                   "could replace the files in it; use a private directory or one with the sticky bit (like /tmp)",
                   dir, (st.st_mode & S_IWOTH) ? "others" : "its group", (unsigned)(st.st_mode & 07777));
    return 0;
}

int hidet_nccl__bf_read(const char *path, size_t min, size_t max, uint8_t **data, size_t *len, char *why, size_t why_bytes) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        if (errno == ELOOP) return WHY("%s is a symbolic link; refused", path);
        return WHY("%s: %s", path, strerror(errno));
    }
    struct stat st;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0) {
        (void)WHY("%s: fstat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode)) {
        (void)WHY("%s is not a regular file; refused", path);
    } else if (st.st_uid != geteuid()) {
        (void)WHY("%s is owned by uid %u, not by this user (uid %u); refused", path, (unsigned)st.st_uid,
            (unsigned)geteuid());
    } else if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        (void)WHY("%s is writable by group or others (mode %04o); refused", path, (unsigned)(st.st_mode & 07777));
    } else if ((size_t)st.st_size < min || (size_t)st.st_size > max) {
        (void)WHY("%s has %lld bytes, not between %zu and %zu (torn, truncated or foreign)", path, (long long)st.st_size,
            min, max);
    } else if ((buf = malloc((size_t)st.st_size + 1)) == NULL) {
        (void)WHY("out of memory reading %s", path);
    } else {
        size_t got = 0, want = (size_t)st.st_size;
        while (got < want) {
            ssize_t r = read(fd, buf + got, want - got);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            got += (size_t)r;
        }
        char extra;
        if (got != want || read(fd, &extra, 1) != 0) {
            (void)WHY("%s changed while being read (%zu of %zu bytes)", path, got, want);
        } else {
            *data = buf;
            *len = want;
            buf = NULL;
            rc = 1;
        }
    }
    free(buf);
    close(fd);
    return rc;
}

/* Writes data to a new temporary file beside path and puts it in place: renamed over what is
 * there, or (exclusive) linked only where nothing is. 0, 1 (exclusive: path exists), or -1
 * and why. The temporary file is gone either way. */
static int put_in_place(const char *path, const uint8_t *data, size_t len, int exclusive, char *why,
                        size_t why_bytes) {
    char tmp[4096 + 64];
    uint32_t salt = 0;
    if (hidet_nccl__bf_random(&salt, sizeof salt, why, why_bytes) != 0) return -1;
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%08x", path, (long)getpid(), salt) >= (int)sizeof tmp)
        return WHY("path %s is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return WHY("cannot create %s: %s", tmp, strerror(errno));
    int rc = 0;
    if (fchmod(fd, 0600) != 0) rc = WHY("fchmod %s: %s", tmp, strerror(errno));
    size_t put = 0;
    while (rc == 0 && put < len) {
        ssize_t w = write(fd, data + put, len - put);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) rc = WHY("write %s: %s", tmp, strerror(errno));
        else put += (size_t)w;
    }
    if (rc == 0 && fsync(fd) != 0) rc = WHY("fsync %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == 0) rc = WHY("close %s: %s", tmp, strerror(errno));
    if (rc == 0 && !exclusive && rename(tmp, path) != 0) rc = WHY("rename %s to %s: %s", tmp, path, strerror(errno));
    if (rc == 0 && exclusive && link(tmp, path) != 0)
        rc = errno == EEXIST ? 1 : WHY("link %s to %s: %s", tmp, path, strerror(errno));
    if (rc != 0 || exclusive) unlink(tmp);
    return rc;
}

int hidet_nccl__bf_publish(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes) {
    return put_in_place(path, data, len, 0, why, why_bytes);
}

int hidet_nccl__bf_publish_new(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes) {
    return put_in_place(path, data, len, 1, why, why_bytes);
}

int hidet_nccl__bf_same_file(const struct stat *a, const struct stat *b) {
    return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
           a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

int hidet_nccl__bf_random(void *out, size_t n, char *why, size_t why_bytes) {
    size_t got = 0;
    while (got < n) {
        ssize_t r = getrandom((char *)out + got, n - got, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return WHY("getrandom: %s", strerror(errno));
        got += (size_t)r;
    }
    return 0;
}
