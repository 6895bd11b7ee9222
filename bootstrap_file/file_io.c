/* Files in a shared directory: O_NOFOLLOW opens, fstat checks, atomic publishing. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"

#define WHY(...) (snprintf(why, why_bytes, __VA_ARGS__), -1)

/* "uid 1001 (mallory)", or "uid 1001" where the name is not known. */
static void owner_of(uid_t uid, char *out, size_t n) {
    struct passwd pw, *found = NULL;
    char buf[2048];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found != NULL)
        snprintf(out, n, "uid %u (%s)", (unsigned)uid, pw.pw_name);
    else
        snprintf(out, n, "uid %u", (unsigned)uid);
}

/* What the rendezvous directory itself (last) or a directory above it must be: this user's or
 * root's (its owner can rename, remove or replace what it holds, sticky bit or not), and not
 * writable by its group or others unless it has the sticky bit (then they can remove or rename
 * only what they own). name is how the message calls it. */
static int safe_dir(const char *path, const char *name, const struct stat *st, int last, char *why, size_t why_bytes) {
    char owner[160], me[160];
    owner_of(st->st_uid, owner, sizeof owner);
    owner_of(geteuid(), me, sizeof me);
    unsigned mode = (unsigned)(st->st_mode & 07777);
    if (st->st_uid != geteuid() && st->st_uid != 0) {
        if (last)
            return WHY("rendezvous directory %s is owned by %s, not by this user (%s) or root (mode %04o): its owner "
                       "can remove or replace the job's files in it; use a directory of your own", name, owner, me,
                       mode);
        return WHY("%s, above the rendezvous directory %s, is owned by %s, not by this user (%s) or root (mode %04o): "
                   "its owner can rename what it holds and put a directory of hers in its place; use a rendezvous "
                   "directory under directories that only you and root can change", path, name, owner, me, mode);
    }
    if ((st->st_mode & (S_IWOTH | S_IWGRP)) && !(st->st_mode & S_ISVTX)) {
        const char *who = (st->st_mode & S_IWOTH) ? "others" : "its group";
        if (last)
            return WHY("rendezvous directory %s is writable by %s without the sticky bit (mode %04o, owner %s): "
                       "another user could replace the files in it; use a private directory or one with the sticky "
                       "bit (like /tmp)", name, who, mode, owner);
        return WHY("%s, above the rendezvous directory %s, is writable by %s without the sticky bit (mode %04o, owner "
                   "%s): another user can rename the directory in it away and put her own in its place; use a "
                   "rendezvous directory under directories that only you and root can change, or one whose parents "
                   "have the sticky bit (like /tmp)", path, name, who, mode, owner);
    }
    return 0;
}

/* Every proper prefix of the absolute path p ("/", "/a", "/a/b" of "/a/b/c"), through fn; the
 * first failure stops the walk. */
static int each_parent(char *p, int (*fn)(const char *prefix, void *ctx), void *ctx) {
    if (fn("/", ctx) != 0) return -1;
    size_t len = strlen(p);
    while (len > 1 && p[len - 1] == '/') p[--len] = '\0'; /* "a/b/" is "a/b" */
    for (char *q = p + 1; *q; q++) {
        if (*q != '/' || q[-1] == '/') continue;
        *q = '\0';
        int rc = fn(p, ctx);
        *q = '/';
        if (rc != 0) return -1;
    }
    return 0;
}

typedef struct {
    const char *name; /* the rendezvous directory as given */
    char *why;
    size_t why_bytes;
} walk_t;

/* A directory above the rendezvous directory on the path as given: a directory must be safe;
 * a symbolic link must be this user's or root's (its owner could point it elsewhere; where it
 * leads is checked by the walk of the resolved path). */
static int given_parent(const char *prefix, void *ctx) {
    walk_t *w = ctx;
    char *why = w->why;
    size_t why_bytes = w->why_bytes;
    struct stat st;
    if (lstat(prefix, &st) != 0) return WHY("rendezvous directory %s: %s: %s", w->name, prefix, strerror(errno));
    if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
        char owner[160];
        owner_of(st.st_uid, owner, sizeof owner);
        return WHY("%s, on the way to the rendezvous directory %s, is a symbolic link owned by %s, not by this user "
                   "or root: its owner can point it elsewhere", prefix, w->name, owner);
    }
    return S_ISDIR(st.st_mode) ? safe_dir(prefix, w->name, &st, 0, why, why_bytes) : 0;
}

/* A directory above the rendezvous directory on the path it resolves to (no links there). */
static int real_parent(const char *prefix, void *ctx) {
    walk_t *w = ctx;
    char *why = w->why;
    size_t why_bytes = w->why_bytes;
    struct stat st;
    if (lstat(prefix, &st) != 0) return WHY("rendezvous directory %s: %s: %s", w->name, prefix, strerror(errno));
    return safe_dir(prefix, w->name, &st, 0, why, why_bytes);
}

/* Checked once, when a bootstrap is made: every directory and link checked is one that only
 * this user and root can change, so what it names cannot change under the job afterwards. */
int hidet_nccl__bf_check_dir(const char *dir, char *why, size_t why_bytes) {
    char real[PATH_MAX], given[PATH_MAX + 2], shown[2 * PATH_MAX + 8];
    struct stat st;
    if (realpath(dir, real) == NULL) return WHY("rendezvous directory %s: %s", dir, strerror(errno));
    if (lstat(real, &st) != 0) return WHY("rendezvous directory %s: %s", dir, strerror(errno));
    if (!S_ISDIR(st.st_mode)) return WHY("rendezvous directory %s is not a directory", dir);
    if (strcmp(real, dir) == 0)
        snprintf(shown, sizeof shown, "%s", dir);
    else
        snprintf(shown, sizeof shown, "%s (that is %s)", dir, real);
    walk_t w = {shown, why, why_bytes};
    if (safe_dir(real, shown, &st, 1, why, why_bytes) != 0) return -1;
    if (dir[0] == '/') {
        snprintf(given, sizeof given, "%s", dir);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd) == NULL) return WHY("rendezvous directory %s: getcwd: %s", dir, strerror(errno));
        if (snprintf(given, sizeof given, "%s/%s", cwd, dir) >= (int)sizeof given)
            return WHY("rendezvous directory %s: path too long", dir);
    }
    size_t len = strlen(given);
    while (len > 1 && given[len - 1] == '/') given[--len] = '\0';
    /* The last component: the directory was checked above through real; a link must be ours. */
    if (lstat(given, &st) == 0 && S_ISLNK(st.st_mode) && st.st_uid != geteuid() && st.st_uid != 0) {
        char owner[160];
        owner_of(st.st_uid, owner, sizeof owner);
        return WHY("rendezvous directory %s is a symbolic link owned by %s, not by this user or root: its owner can "
                   "point it elsewhere", given, owner);
    }
    if (each_parent(given, given_parent, &w) != 0) return -1;
    return each_parent(real, real_parent, &w);
}

void hidet_nccl__bf_in_the_way(const char *path, const struct stat *st, char *out, size_t n) {
    char what[256], me[160];
    hidet_nccl__bf_what_is(st, what, sizeof what);
    if (st->st_uid != geteuid()) {
        owner_of(geteuid(), me, sizeof me);
        snprintf(out, n, "%s is %s, not this user's file (this user: %s): another user's file at the job's name (a "
                 "shared directory?); refused, and not this user's to remove: she must remove it, or give the job a "
                 "private rendezvous directory", path, what, me);
    } else {
        snprintf(out, n, "%s is %s: this user's, but not a regular file the job wrote; refused: remove it", path, what);
    }
}

/* Why path, which open(2) refused with err, was not read: what is there and whose, when it can
 * be seen. */
static int refused_open(const char *path, int err, char *why, size_t why_bytes) {
    struct stat st;
    if (lstat(path, &st) != 0) return WHY("%s: %s", path, strerror(err));
    if (err == ELOOP) { /* the message tests and users know: "is a symbolic link; refused" */
        char what[256];
        hidet_nccl__bf_what_is(&st, what, sizeof what);
        return WHY("%s is a symbolic link; refused (%s)", path, what);
    }
    if (st.st_uid != geteuid() || !S_ISREG(st.st_mode)) {
        hidet_nccl__bf_in_the_way(path, &st, why, why_bytes);
        return -1;
    }
    return WHY("%s: %s", path, strerror(err));
}

int hidet_nccl__bf_read(const char *path, size_t min, size_t max, uint8_t **data, size_t *len, char *why, size_t why_bytes) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        if (errno == ENOENT) return 0;
        return refused_open(path, errno, why, why_bytes);
    }
    struct stat st;
    int rc = -1;
    uint8_t *buf = NULL;
    if (fstat(fd, &st) != 0) {
        (void)WHY("%s: fstat: %s", path, strerror(errno));
    } else if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
        hidet_nccl__bf_in_the_way(path, &st, why, why_bytes);
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

/* A rename or link of tmp to path failed with err: what is at path and whose when that is why
 * (another user's file in a sticky directory, a directory), else the call and its error. -1. */
static int in_the_way_or(const char *path, int err, const char *call, const char *tmp, char *why, size_t why_bytes) {
    struct stat st;
    if (lstat(path, &st) == 0 && (st.st_uid != geteuid() || !S_ISREG(st.st_mode))) {
        hidet_nccl__bf_in_the_way(path, &st, why, why_bytes);
        return -1;
    }
    return WHY("%s %s to %s: %s", call, tmp, path, strerror(err));
}

/* Writes data to a new temporary file beside path and puts it in place: renamed over what is
 * there (how HOW_OVER), linked only where nothing is (HOW_NEW), or renamed over *expect only
 * (HOW_IF_SAME: looked at just before the rename, so that a file that changed since its
 * caller read it is not overwritten). 0, 1 (not put: a file is there, or it changed), or -1
 * and why. The temporary file is gone either way. */
enum { HOW_OVER, HOW_NEW, HOW_IF_SAME };
static int put_in_place(const char *path, const uint8_t *data, size_t len, int how, const struct stat *expect,
                        struct stat *put_st, char *why, size_t why_bytes) {
    char tmp[4096 + 160], host[HN_BF_HOST_BYTES + 1];
    uint32_t salt = 0;
    if (hidet_nccl__bf_random(&salt, sizeof salt, why, why_bytes) != 0) return -1;
    hidet_nccl__bf_this_host(host);
    if (snprintf(tmp, sizeof tmp, "%s.tmp.%s.%ld.%08x", path, host, (long)getpid(), salt) >= (int)sizeof tmp)
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
    struct stat mine; /* the file as put: rename and link keep its inode and mtime */
    if (rc == 0 && fstat(fd, &mine) != 0) rc = WHY("fstat %s: %s", tmp, strerror(errno));
    if (close(fd) != 0 && rc == 0) rc = WHY("close %s: %s", tmp, strerror(errno));
    struct stat now;
    if (rc == 0 && how == HOW_IF_SAME && (lstat(path, &now) != 0 || !hidet_nccl__bf_same_file(&now, expect))) rc = 1;
    if (rc == 0 && how != HOW_NEW && rename(tmp, path) != 0)
        rc = in_the_way_or(path, errno, "rename", tmp, why, why_bytes);
    if (rc == 0 && how == HOW_NEW && link(tmp, path) != 0)
        rc = errno == EEXIST ? 1 : in_the_way_or(path, errno, "link", tmp, why, why_bytes);
    if (rc != 0 || how == HOW_NEW) unlink(tmp);
    if (rc == 0 && put_st != NULL) *put_st = mine;
    return rc;
}

int hidet_nccl__bf_publish(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes) {
    return put_in_place(path, data, len, HOW_OVER, NULL, NULL, why, why_bytes);
}

int hidet_nccl__bf_publish_new(const char *path, const uint8_t *data, size_t len, struct stat *put, char *why,
                               size_t why_bytes) {
    return put_in_place(path, data, len, HOW_NEW, NULL, put, why, why_bytes);
}

int hidet_nccl__bf_publish_over(const char *path, const struct stat *expect, const uint8_t *data, size_t len,
                                struct stat *put, char *why, size_t why_bytes) {
    return put_in_place(path, data, len, HOW_IF_SAME, expect, put, why, why_bytes);
}

void hidet_nccl__bf_what_is(const struct stat *st, char *out, size_t n) {
    char owner[160];
    owner_of(st->st_uid, owner, sizeof owner);
    const char *kind = S_ISREG(st->st_mode) ? "a regular file" : S_ISDIR(st->st_mode) ? "a directory"
                       : S_ISLNK(st->st_mode) ? "a symbolic link" : "a special file";
    snprintf(out, n, "%s owned by %s, mode %04o", kind, owner, (unsigned)(st->st_mode & 07777));
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

void hidet_nccl__bf_this_host(char host[HN_BF_HOST_BYTES + 1]) {
    if (gethostname(host, HN_BF_HOST_BYTES) != 0) host[0] = '\0';
    host[HN_BF_HOST_BYTES] = '\0';
}

/* 1 if process pid, which kill(2) found a moment ago, is dead: a zombie not yet reaped by its
 * parent (a launcher busy elsewhere: 'Z'), or one its parent is reaping right now ('X'), or one
 * reaped since kill(2) found it (its /proc entry gone or unreadable: kill(2) no longer finds it
 * either). Without that last look a process seen gone once could look alive again for an
 * instant, and whoever asked then kept what only a live process needs: a survivor's finalize
 * left a recovery round's decision for a victim that hidet-nccl-run, busy on a loaded machine,
 * reaped between the two looks. Linux's /proc; where there is none, the second kill(2) decides. */
static int dead(pid_t pid) {
    char path[64], line[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t got = fd < 0 ? -1 : read(fd, line, sizeof line - 1);
    if (fd >= 0) close(fd);
    if (got <= 0) return kill(pid, 0) != 0 && errno == ESRCH; /* reaped meanwhile, or no /proc here */
    line[got] = '\0';
    const char *end = strrchr(line, ')'); /* "pid (comm) S ...": comm may hold anything */
    return end != NULL && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X' || end[2] == 'x');
}

int hidet_nccl__bf_process_gone(uint32_t pid, const char *host) {
    char here[HN_BF_HOST_BYTES + 1];
    hidet_nccl__bf_this_host(here);
    if (strcmp(here, host) != 0 || pid == 0 || pid > (uint32_t)INT_MAX || (pid_t)pid == getpid()) return 0;
    if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
    return dead((pid_t)pid);
}

int hidet_nccl__bf_remove_if_same(const char *path, const uint8_t *data, size_t len) {
    char trash[4096 + 160], host[HN_BF_HOST_BYTES + 1], why[256];
    uint32_t salt = 0;
    uint8_t *now = NULL;
    size_t now_len = 0;
    hidet_nccl__bf_this_host(host);
    if (hidet_nccl__bf_random(&salt, sizeof salt, why, sizeof why) != 0 ||
        snprintf(trash, sizeof trash, "%s.tmp.%s.%ld.%08x", path, host, (long)getpid(), salt) >= (int)sizeof trash ||
        rename(path, trash) != 0)
        return 0;
    int same = hidet_nccl__bf_read(trash, len, len, &now, &now_len, why, sizeof why) == 1 && now_len == len &&
               memcmp(now, data, len) == 0;
    free(now);
    /* not the file judged: put back where it was; if another came there meanwhile, the moved one
     * stays under its temporary name (swept once this process is gone) rather than be lost */
    if (same || link(trash, path) == 0) unlink(trash);
    return same;
}

int hidet_nccl__bf_tmp_orphaned(const char *name) {
    const char *at = strstr(name, ".tmp."), *salt = strrchr(name, '.');
    if (at == NULL || salt == NULL || salt <= at + 5) return 0;
    const char *pid_at = salt; /* <host>.<pid>.<random>: read from the right, host names hold dots */
    while (pid_at > at + 5 && pid_at[-1] != '.') pid_at--;
    if (pid_at <= at + 5 || pid_at == salt) return 0;
    char host[HN_BF_HOST_BYTES + 1];
    size_t host_len = (size_t)(pid_at - 1 - (at + 5));
    if (host_len == 0 || host_len > HN_BF_HOST_BYTES) return 0;
    memcpy(host, at + 5, host_len);
    host[host_len] = '\0';
    uint32_t pid = 0;
    for (const char *c = pid_at; c < salt; c++) {
        if (*c < '0' || *c > '9' || pid > 100000000u) return 0;
        pid = pid * 10 + (uint32_t)(*c - '0');
    }
    return hidet_nccl__bf_process_gone(pid, host);
}
