/* Internal: reading and writing files in a shared directory that is not trusted. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_IO_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_IO_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* Refuses a directory that is missing, not a directory, or writable by its group or others
 * without the sticky bit (they could then replace our files). 0, or -1 and why. */
int hidet_nccl__bf_check_dir(const char *dir, char *why, size_t why_bytes);

/* Reads a whole file, opened with O_NOFOLLOW and checked with fstat: a regular file, owned
 * by this user, not writable by group or others, between min and max bytes.
 * 1: read (*data malloc'ed, caller frees); 0: no such file; -1: refused, why says so. */
int hidet_nccl__bf_read(const char *path, size_t min, size_t max, uint8_t **data, size_t *len, char *why, size_t why_bytes);

/* Atomically puts data at path: a temporary file in the same directory created with
 * O_CREAT|O_EXCL|O_NOFOLLOW and mode 0600 whatever the umask, written, fsync'ed, renamed
 * into place. 0, or -1 and why. */
int hidet_nccl__bf_publish(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes);
/* The same, but only where no file is (link(2) of the temporary file): 0 put, 1 a file is
 * already there (left as it is), -1 and why. */
int hidet_nccl__bf_publish_new(const char *path, const uint8_t *data, size_t len, char *why, size_t why_bytes);

/* 1 if a and b (lstat results) are the same file unchanged: device, inode, size, mtime. */
int hidet_nccl__bf_same_file(const struct stat *a, const struct stat *b);

/* n random bytes from the kernel. 0, or -1 and why. */
int hidet_nccl__bf_random(void *out, size_t n, char *why, size_t why_bytes);

#endif
