/* What the cases of bootstrap_file_test play with (declared in tests/bootstrap_file_test.h):
 * ranks as file_bootstrap_peer processes and the ids they print, the directory of a case, files
 * of the format made by hand (claims, hellos), a reader and a root in this process. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/bootstrap_file_test.h"
#include "tests/deadline.h"

char g_peer[PATH_MAX];
char g_base[PATH_MAX];
int g_case;

double job_deadline(int n) { return hn_test_deadline(0.5, n, 60); }

/* A fresh private directory for one case. */
void new_dir(char *out, size_t n) {
    snprintf(out, n, "%s/case%d", g_base, ++g_case);
    mkdir(out, 0700);
}

/* What spawn_as gives the next processes it starts: a slow file system (ms per operation on
 * the rendezvous directory, 0: none), and stderr kept in out.<label>.<rank>.err. */
int g_slow_ms, g_keep_stderr;

/* Rank `rank` of a job with key `key`, its output in out.<label>.<rank>. */
pid_t spawn_as(const char *dir, const char *key, const char *label, int rank, int n, int rounds, double timeout,
               int delay_ms) {
    char r[16], sz[16], rd[16], to[32], out[PATH_MAX + 32], dl[16];
    snprintf(r, sizeof r, "%d", rank);
    snprintf(sz, sizeof sz, "%d", n);
    snprintf(rd, sizeof rd, "%d", rounds);
    snprintf(to, sizeof to, "%g", timeout);
    snprintf(out, sizeof out, "%s/out.%s.%d", g_base, label, rank);
    snprintf(dl, sizeof dl, "%d", delay_ms);
    pid_t pid = fork();
    if (pid == 0) {
        if (g_slow_ms > 0) {
            char ms[16];
            snprintf(ms, sizeof ms, "%d", g_slow_ms);
            setenv("HN_TEST_SLOW_FS_MS", ms, 1);
        }
        if (g_keep_stderr) {
            char err[PATH_MAX + 40];
            snprintf(err, sizeof err, "%s.err", out);
            int fd = open(err, O_CREAT | O_WRONLY | O_TRUNC, 0600);
            if (fd >= 0) dup2(fd, 2);
        }
        execl(g_peer, g_peer, dir, key, r, sz, rd, to, out, dl, (char *)NULL);
        _exit(127);
    }
    return pid;
}

pid_t spawn(const char *dir, const char *key, int rank, int n, int rounds, double timeout, int delay_ms) {
    return spawn_as(dir, key, key, rank, n, rounds, timeout, delay_ms);
}

/* A valid claim of round 0 of job `key` (world 2, root 0) held for hold_ms more (< 0: expired). */
size_t claim_file(uint8_t *out, size_t cap, const char *key, uint32_t world, long hold_ms) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    uint8_t nonce[HN_BF_NONCE];
    memset(nonce, 0x3C, sizeof nonce);
    return hidet_nccl__bf_encode_claim(out, cap, key, 0, world, 0, nonce, ms + (uint64_t)hold_ms, 1, 0, "elsewhere");
}

/* Starts n ranks of job `key` (the root after root_delay_ms) and waits; returns the
 * number of ranks that failed. */
int run_job(const char *dir, const char *key, int n, int rounds, double timeout, int root_delay_ms) {
    pid_t *pids = calloc((size_t)n, sizeof *pids);
    for (int r = n - 1; r >= 0; r--) pids[r] = spawn(dir, key, r, n, rounds, timeout, r == 0 ? root_delay_ms : 0);
    int failed = 0;
    for (int r = 0; r < n; r++) {
        int ws = 0;
        waitpid(pids[r], &ws, 0);
        failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    free(pids);
    return failed;
}

/* The hex id rank got in round, from its output file ("" if none). */
void id_of(const char *key, int rank, int round, char hex[2 * 128 + 1]) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/out.%s.%d", g_base, key, rank);
    hex[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    int rd;
    char h[300];
    double t;
    while (fscanf(f, "%d %299s %lf", &rd, h, &t) == 3)
        if (rd == round) snprintf(hex, 2 * 128 + 1, "%s", h);
    fclose(f);
}

/* Files in dir whose names contain `part`. */
int count_files(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strstr(e->d_name, part) != NULL) n++;
    closedir(d);
    return n;
}

int all_same_id(const char *key, int n, int round, char first[2 * 128 + 1]) {
    id_of(key, 0, round, first);
    if (strlen(first) != 256 || strspn(first, "0") == 256) return 0;
    for (int r = 1; r < n; r++) {
        char h[2 * 128 + 1];
        id_of(key, r, round, h);
        if (strcmp(h, first) != 0) {
            fprintf(stderr, "rank %d of %s got %s, rank 0 sent %s\n", r, key, h, first);
            return 0;
        }
    }
    return 1;
}

/* A reader (rank 1 of 2, in this process) with a short deadline; g_last keeps the message. */
char g_last[8192];
hidet_nccl_status_t read_once(const char *dir, const char *key, double timeout, double *elapsed) {
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = key;
    p.rank = 1;
    p.nranks = 2;
    hidet_nccl_bootstrap_h bs;
    hidet_nccl_status_t st = hidet_nccl_bootstrap_file(&p, &bs);
    snprintf(g_last, sizeof g_last, "%s", hidet_nccl_last_error());
    if (st != HIDET_NCCL_SUCCESS) return st;
    ncclUniqueId id;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    st = hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, timeout);
    clock_gettime(CLOCK_MONOTONIC, &b);
    snprintf(g_last, sizeof g_last, "%s", hidet_nccl_last_error());
    if (elapsed) *elapsed = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
    hidet_nccl_bootstrap_destroy(bs);
    return st;
}

void put_file(const char *path, const uint8_t *data, size_t len, mode_t mode) {
    unlink(path);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, data, len) == (ssize_t)len);
    CU_ASSERT_FATAL(fchmod(fd, mode) == 0);
    close(fd);
}

void *root_thread(void *arg) {
    root_job_t *j = arg;
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = j->dir;
    p.job_key = j->key;
    p.rank = 0;
    p.nranks = j->nranks ? j->nranks : 2;
    hidet_nccl_bootstrap_h bs;
    j->st = hidet_nccl_bootstrap_file(&p, &bs);
    if (j->st == HIDET_NCCL_SUCCESS) {
        char buf[16] = "from the root";
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        j->st = hidet_nccl_bootstrap_broadcast(bs, buf, sizeof buf, 0, j->timeout);
        clock_gettime(CLOCK_MONOTONIC, &b);
        j->took = (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
        snprintf(j->msg, sizeof j->msg, "%s", hidet_nccl_last_error());
        hidet_nccl_bootstrap_destroy(bs);
    }
    return NULL;
}

int read_msg(const char *path, uint8_t *buf, size_t cap, hidet_nccl__bf_msg_t *m) {
    int fd = open(path, O_RDONLY);
    ssize_t n = fd >= 0 ? read(fd, buf, cap) : -1;
    if (fd >= 0) close(fd);
    char why[512];
    return n > 0 && hidet_nccl__bf_parse(buf, (size_t)n, m, why, sizeof why) == 0;
}

/* As rank `rank` of `world`: waits (up to wait_s, scaled) for round 0's claim of `key`, then puts a
 * hello answering it with a nonce of nonce_byte, as written by process pid of host (by default pid 1
 * of another host: a writer whose death nobody here can see). 0, or -1. */
uint32_t g_fake_pid = 1;
const char *g_fake_host = "elsewhere";
int fake_hello_rank(const char *dir, const char *key, int nonce_byte, int rank, int world, double wait_s) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.root", dir, key);
    uint8_t buf[1024], hello[HN_BF_HEADER + HN_BF_HELLO_FIXED + 4], nonce[HN_BF_NONCE];
    hidet_nccl__bf_msg_t m;
    int claimed = 0;
    HN_WAIT_FOR(claimed, read_msg(path, buf, sizeof buf, &m), wait_s, "the root's claim");
    if (!claimed) return -1;
    memset(nonce, nonce_byte, sizeof nonce);
    size_t len = hidet_nccl__bf_encode_hello(hello, sizeof hello, key, 0, (uint32_t)world, (uint32_t)rank, nonce,
                                             m.nonce, g_fake_pid, g_fake_host, NULL, 0, 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.hello.%d", dir, key, rank);
    char tmp[PATH_MAX + 80];
    snprintf(tmp, sizeof tmp, "%s.test", path);
    put_file(tmp, hello, len, 0600);
    return rename(tmp, path);
}

int fake_hello(const char *dir, const char *key, int nonce_byte, double wait_s) {
    return fake_hello_rank(dir, key, nonce_byte, 1, 2, wait_s);
}

/* Waits for pid; 1 if it exited with status 0. */
int exited_ok(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

/* The pid of a process that is gone: a child that exited and was reaped. */
pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

void this_host(char host[HN_BF_HOST_BYTES + 1]) {
    if (gethostname(host, HN_BF_HOST_BYTES) != 0) host[0] = '\0';
    host[HN_BF_HOST_BYTES] = '\0';
}

/* Puts a claim on round 0 of `key` (root 0), held hold_ms more, of process pid on host. */
void put_claim(const char *dir, const char *key, uint32_t world, long hold_ms, uint32_t pid, uint32_t flags,
               const char *host) {
    char path[PATH_MAX + 64];
    uint8_t file[1024], nonce[HN_BF_NONCE];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    memset(nonce, 0x77, sizeof nonce);
    size_t len = hidet_nccl__bf_encode_claim(file, sizeof file, key, 0, world, 0, nonce, ms + (uint64_t)hold_ms, pid,
                                             flags, host);
    snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.root", dir, key);
    put_file(path, file, len, 0600);
}

/* 1 once path exists, 0 if it did not within wait_s (scaled). */
int wait_for(const char *path, double wait_s) {
    int there = 0;
    HN_WAIT_FOR(there, access(path, F_OK) == 0, wait_s, path);
    return there;
}

/* The stderr a process started with g_keep_stderr left ("" if none). */
void err_of(const char *label, int rank, char *out, size_t n) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/out.%s.%d.err", g_base, label, rank);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = '\0';
    fclose(f);
}
