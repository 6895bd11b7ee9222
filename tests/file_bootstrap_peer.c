/* One rank of a shared-file bootstrap job, for tests and the benchmark (run as a separate
 * process: fork/exec, never threads).
 *   file_bootstrap_peer DIR KEY RANK NRANKS ROUNDS TIMEOUT_S OUT [DELAY_MS]
 * Each round, rank 0 broadcasts a fresh real ncclGetUniqueId; every rank appends to OUT one
 * line: "<round> <hex of the 128 bytes> <CLOCK_REALTIME seconds when it had them>". Then every
 * rank allgathers (round, rank, a byte of the id) and checks what every other rank sent.
 * ROUNDS < 0: -ROUNDS rounds, each through a bootstrap of its own made and destroyed around its
 * one broadcast (what calling hidet_nccl_init again does), without the allgather.
 * Exit 0 on success; otherwise 1, with "rank R (after S s): hidet_nccl_last_error()" on stderr
 * (S: how long the failing call really took, for the deadline tests).
 *
 * A slow file system for the deadline tests (issue 27, item 22): with HN_TEST_SLOW_FS_MS=N in
 * its environment, every path operation of the library on DIR (open, stat, lstat, link,
 * rename, unlink, unlinkat, opendir, fsync) first sleeps N ms. The library's calls reach these
 * wrappers through the linker's --wrap (tests/BUILD); nothing in the library knows of them. */
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"

static const char *g_dir;
static long g_slow_ms = -1; /* -1: not read yet */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Sleeps the configured time when path is in the rendezvous directory (NULL: an fd's operation). */
static void slow(const char *path) {
    if (g_slow_ms < 0) {
        const char *v = getenv("HN_TEST_SLOW_FS_MS");
        g_slow_ms = v ? atol(v) : 0;
    }
    if (g_slow_ms == 0 || g_dir == NULL) return;
    if (path != NULL && strncmp(path, g_dir, strlen(g_dir)) != 0) return;
    struct timespec ts = {g_slow_ms / 1000, (g_slow_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int __real_open(const char *path, int flags, ...);
int __real_stat(const char *path, struct stat *st);
int __real_lstat(const char *path, struct stat *st);
int __real_link(const char *from, const char *to);
int __real_rename(const char *from, const char *to);
int __real_unlink(const char *path);
int __real_unlinkat(int fd, const char *name, int flags);
DIR *__real_opendir(const char *path);
int __real_fsync(int fd);
int __wrap_open(const char *path, int flags, ...) {
    va_list ap;
    va_start(ap, flags);
    int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;
    va_end(ap);
    slow(path);
    return __real_open(path, flags, mode);
}
int __wrap_stat(const char *path, struct stat *st) { return slow(path), __real_stat(path, st); }
int __wrap_lstat(const char *path, struct stat *st) { return slow(path), __real_lstat(path, st); }
int __wrap_link(const char *from, const char *to) { return slow(to), __real_link(from, to); }
int __wrap_rename(const char *from, const char *to) { return slow(to), __real_rename(from, to); }
int __wrap_unlink(const char *path) { return slow(path), __real_unlink(path); }
int __wrap_unlinkat(int fd, const char *name, int flags) { return slow(NULL), __real_unlinkat(fd, name, flags); }
DIR *__wrap_opendir(const char *path) { return slow(path), __real_opendir(path); }
int __wrap_fsync(int fd) { return slow(NULL), __real_fsync(fd); }

int main(int argc, char **argv) {
    if (argc < 8) {
        fprintf(stderr, "usage: %s DIR KEY RANK NRANKS ROUNDS TIMEOUT_S OUT [DELAY_MS]\n", argv[0]);
        return 2;
    }
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = argv[1];
    g_dir = argv[1];
    p.job_key = argv[2];
    p.rank = atoi(argv[3]);
    p.nranks = atoi(argv[4]);
    int rounds = atoi(argv[5]), fresh = rounds < 0;
    if (fresh) rounds = -rounds;
    double timeout = atof(argv[6]);
    if (argc > 8) usleep((useconds_t)atoi(argv[8]) * 1000); /* a rank that comes late, as its test asks */
    hidet_nccl_bootstrap_h bs = NULL;
    FILE *out = fopen(argv[7], "w");
    if (out == NULL) return 1;
    for (int round = 0; round < rounds; round++) {
        if (bs == NULL && hidet_nccl_bootstrap_file(&p, &bs) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank %d: %s\n", p.rank, hidet_nccl_last_error());
            return 1;
        }
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        if (p.rank == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank 0: %s\n", hidet_nccl_last_error());
            return 1;
        }
        double start = now_s();
        if (hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, timeout) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank %d (after %.3f s): %s\n", p.rank, now_s() - start, hidet_nccl_last_error());
            return 1;
        }
        struct timespec now;
        clock_gettime(CLOCK_REALTIME, &now);
        if (!fresh) { /* a fresh bootstrap does what hidet_nccl_init does: one broadcast */
            int mine[3] = {round, p.rank, (unsigned char)id.internal[p.rank % sizeof id]};
            int *all = calloc((size_t)p.nranks, sizeof mine);
            if (all == NULL || hidet_nccl_bootstrap_allgather(bs, mine, all, sizeof mine, timeout) != HIDET_NCCL_SUCCESS) {
                fprintf(stderr, "rank %d: allgather: %s\n", p.rank, hidet_nccl_last_error());
                return 1;
            }
            for (int r = 0; r < p.nranks; r++)
                if (all[3 * r] != round || all[3 * r + 1] != r ||
                    all[3 * r + 2] != (unsigned char)id.internal[r % sizeof id]) {
                    fprintf(stderr, "rank %d: allgather round %d: rank %d's part is (%d, %d, %d)\n", p.rank, round, r,
                            all[3 * r], all[3 * r + 1], all[3 * r + 2]);
                    return 1;
                }
            free(all);
        }
        fprintf(out, "%d ", round);
        for (size_t i = 0; i < sizeof id; i++) fprintf(out, "%02x", (unsigned char)id.internal[i]);
        fprintf(out, " %lld.%09ld\n", (long long)now.tv_sec, now.tv_nsec);
        fflush(out);
        if (fresh && hidet_nccl_bootstrap_destroy(bs) != HIDET_NCCL_SUCCESS) return 1;
        if (fresh) bs = NULL;
    }
    fclose(out);
    return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
}
