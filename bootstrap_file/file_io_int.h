/* Internal: reading and writing files in a shared directory that is not trusted. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_IO_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_IO_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootstrap_file/file_format_int.h"

/* Refuses a rendezvous directory that someone other than this user and root could change or
 * swap (docs/bootstrap_file.md, "Who can do what"): missing or not a directory; owned by
 * another user (root's is fine); writable by its group or others without the sticky bit; a
 * directory above it (on the path as given and on the path it resolves to) owned by another
 * user or writable by group or others without the sticky bit (the directory in it could be
 * renamed away and replaced); a symbolic link on the way owned by another user (she could
 * point it elsewhere). 0, or -1 and why, naming the path, its owner and its mode. */
int hidet_nccl__bf_check_dir(const char *dir, char *why, size_t why_bytes);

/* Reads a whole file, opened with O_NOFOLLOW and checked with fstat: a regular file, owned
 * by this user, not writable by group or others, between min and max bytes.
 * 1: read (*data malloc'ed, caller frees); 0: no such file; -1: refused, why says so. */
int hidet_nccl__bf_read(const char *path, size_t min, size_t max, uint8_t **data, size_t *len, char *why, size_t why_bytes);

/* Atomically puts data at path: a temporary file in the same directory,
 * <path>.tmp.<host>.<pid>.<random>, created with O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600
 * whatever the umask, written, fsync'ed, renamed into place. 0, or -1 and why. */
int hidet_nccl__bf_publish(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes);
/* The same, but only where no file is (link(2) of the temporary file): 0 put (and, unless put
 * is NULL, the file as put, as lstat would give it), 1 a file is already there (left as it
 * is), -1 and why. */
int hidet_nccl__bf_publish_new(const char *path, const uint8_t *data, size_t len, struct stat *put, char *why,
                               size_t why_bytes);
/* The same, but only over the file *expect (an lstat of it), looked at again just before the
 * rename: 0 put (*put as above), 1 the file changed or went (nothing put), -1 and why. */
int hidet_nccl__bf_publish_over(const char *path, const struct stat *expect, const uint8_t *data, size_t len,
                                struct stat *put, char *why, size_t why_bytes);

/* "a directory owned by uid 1001 (mallory), mode 0755", for messages about what is in the way. */
void hidet_nccl__bf_what_is(const struct stat *st, char *out, size_t n);
/* What st (an lstat of path) is when it is not this user's regular file, as a refusal: "<path> is
 * a regular file owned by uid 1001 (mallory), mode 0600, not this user's file ...: another
 * user's file at the job's name ...", or "<path> is a directory owned by ...: this user's, but
 * not a regular file the job wrote ...". */
void hidet_nccl__bf_in_the_way(const char *path, const struct stat *st, char *out, size_t n);

/* 1 if a and b (lstat results) are the same file unchanged: device, inode, size, mtime. */
int hidet_nccl__bf_same_file(const struct stat *a, const struct stat *b);

/* n random bytes from the kernel. 0, or -1 and why. */
int hidet_nccl__bf_random(void *out, size_t n, char *why, size_t why_bytes);

/* This host's name, as files carry it (at most HN_BF_HOST_BYTES, NUL-terminated). */
void hidet_nccl__bf_this_host(char host[HN_BF_HOST_BYTES + 1]);
/* 1 if the writer (pid, host) of a file is a process of this host that is gone (or dead and not
 * yet reaped: a zombie, or being reaped as it looks); once gone, never alive again (short of
 * its pid's reuse); 0 if it lives, is this process, or is of another host (which nobody
 * here can tell). Process ids are this
 * host's: processes of one host name in different pid namespaces (containers sharing a host
 * name and a directory) are not told apart. */
int hidet_nccl__bf_process_gone(uint32_t pid, const char *host);
/* Removes the file at path only if it holds exactly data (len bytes): it is moved aside under a
 * temporary name first and read there, so that a file put at path since it was judged is put
 * back, never removed. 1 removed, 0 not. */
int hidet_nccl__bf_remove_if_same(const char *path, const uint8_t *data, size_t len);
/* 1 if name (a directory entry) is a temporary file of hidet_nccl__bf_publish* whose writer is
 * a process of this host that is gone: a writer killed mid-write, whose file nobody finishes. */
int hidet_nccl__bf_tmp_orphaned(const char *name);

#endif
