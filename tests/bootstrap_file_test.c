/* The shared-file bootstrap, on the CPU, with real ncclGetUniqueId bytes in many processes
 * (fork/exec of file_bootstrap_peer). Numbers refer to the list of properties. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

/* A hello of round 0 of `key`, as rank `rank` of `world` (its writer: this test process). */
#define HELLO_FILE(out, key, world, rank, nonce, root_nonce)                                                 \
    hidet_nccl__bf_encode_hello((out), sizeof(out), (key), 0, (world), (rank), (nonce), (root_nonce), 1, "elsewhere", \
                                NULL, 0, 0)

/* Item 22's bounds, at 300 ms per file operation and a 1 s deadline (file_bootstrap.c: no step
 * starts past the deadline; past it, a call ends the operation in flight and cleans up). */
#define SLOW_ROOT_BOUND 3.0
#define SLOW_READER_BOUND 3.0
#define SLOW_CLEANUP_S 1.3

static char g_peer[PATH_MAX];
static char g_base[PATH_MAX];
static int g_case;

/* A fresh private directory for one case. */
static void new_dir(char *out, size_t n) {
    snprintf(out, n, "%s/case%d", g_base, ++g_case);
    mkdir(out, 0700);
}

/* What spawn_as gives the next processes it starts: a slow file system (ms per operation on
 * the rendezvous directory, 0: none), and stderr kept in out.<label>.<rank>.err. */
static int g_slow_ms, g_keep_stderr;

/* Rank `rank` of a job with key `key`, its output in out.<label>.<rank>. */
static pid_t spawn_as(const char *dir, const char *key, const char *label, int rank, int n, int rounds, double timeout,
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

static pid_t spawn(const char *dir, const char *key, int rank, int n, int rounds, double timeout, int delay_ms) {
    return spawn_as(dir, key, key, rank, n, rounds, timeout, delay_ms);
}

/* A valid claim of round 0 of job `key` (world 2, root 0) held for hold_ms more (< 0: expired). */
static size_t claim_file(uint8_t *out, size_t cap, const char *key, uint32_t world, long hold_ms) {
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
    uint8_t nonce[HN_BF_NONCE];
    memset(nonce, 0x3C, sizeof nonce);
    return hidet_nccl__bf_encode_claim(out, cap, key, 0, world, 0, nonce, ms + (uint64_t)hold_ms, 1, 0, "elsewhere");
}

/* Starts n ranks of job `key` (the root after root_delay_ms) and waits; returns the
 * number of ranks that failed. */
static int run_job(const char *dir, const char *key, int n, int rounds, double timeout, int root_delay_ms) {
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
static void id_of(const char *key, int rank, int round, char hex[2 * 128 + 1]) {
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
static int count_files(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strstr(e->d_name, part) != NULL) n++;
    closedir(d);
    return n;
}

static int all_same_id(const char *key, int n, int round, char first[2 * 128 + 1]) {
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

/* 1 and 8: every process gets exactly the root's bytes; nothing is left behind. */
static void check_n(int n) {
    char dir[PATH_MAX], key[32], id[257];
    new_dir(dir, sizeof dir);
    snprintf(key, sizeof key, "job%d", n);
    CU_ASSERT_EQUAL(run_job(dir, key, n, 1, 60, 0), 0);
    CU_ASSERT(all_same_id(key, n, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}
static void test_2_ranks(void) { check_n(2); }
static void test_8_ranks(void) { check_n(8); }
static void test_64_ranks(void) { check_n(64); }
static void test_256_ranks(void) { check_n(256); }

/* 2: a valid file left by an earlier job at the very same path (same key, same round) is
 * never accepted: the reader arrives first and must wait for the new root. */
static void test_stale_file_not_accepted(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], id[257];
    new_dir(dir, sizeof dir);
    uint8_t nonces[2 * HN_BF_NONCE], data[128], file[1024];
    memset(nonces, 0x5A, sizeof nonces);
    memset(data, 0xEE, sizeof data);
    size_t len = hidet_nccl__bf_encode_announce(file, sizeof file, "samekey", 0, 2, 0, data, sizeof data, nonces, 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.samekey.0.id", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0 && write(fd, file, len) == (ssize_t)len);
    close(fd);
    /* ... and its root's claim, expired: ignored by the readers, replaced by the new root. */
    len = claim_file(file, sizeof file, "samekey", 2, -1000);
    snprintf(path, sizeof path, "%s/hidet-nccl.samekey.0.root", dir);
    fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0 && write(fd, file, len) == (ssize_t)len);
    close(fd);
    CU_ASSERT_EQUAL(run_job(dir, "samekey", 2, 1, 30, 500), 0);
    CU_ASSERT(all_same_id("samekey", 2, 0, id));
    CU_ASSERT(strncmp(id, "eeeeeeee", 8) != 0);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* 3: two jobs at once in one directory never see each other's ids. */
static void test_two_jobs_one_dir(void) {
    char dir[PATH_MAX], a[257], b[257];
    new_dir(dir, sizeof dir);
    pid_t pids[16];
    for (int r = 7; r >= 0; r--) {
        pids[2 * r] = spawn(dir, "jobA", r, 8, 3, 60, 0);
        pids[2 * r + 1] = spawn(dir, "jobB", r, 8, 3, 60, 0);
    }
    int failed = 0;
    for (int i = 0; i < 16; i++) {
        int ws;
        waitpid(pids[i], &ws, 0);
        failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
    }
    CU_ASSERT_EQUAL(failed, 0);
    for (int round = 0; round < 3; round++) {
        CU_ASSERT(all_same_id("jobA", 8, round, a));
        CU_ASSERT(all_same_id("jobB", 8, round, b));
        CU_ASSERT_STRING_NOT_EQUAL(a, b);
    }
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* 4: communicators one after the other in one job get different ids. */
static void test_rounds_get_fresh_ids(void) {
    char dir[PATH_MAX], first[257], second[257], third[257];
    new_dir(dir, sizeof dir);
    CU_ASSERT_EQUAL(run_job(dir, "rounds", 4, 3, 60, 0), 0);
    CU_ASSERT(all_same_id("rounds", 4, 0, first));
    CU_ASSERT(all_same_id("rounds", 4, 1, second));
    CU_ASSERT(all_same_id("rounds", 4, 2, third));
    CU_ASSERT_STRING_NOT_EQUAL(first, second);
    CU_ASSERT_STRING_NOT_EQUAL(second, third);
}

/* A reader (rank 1 of 2, in this process) with a short deadline; g_last keeps the message. */
static char g_last[8192];
static hidet_nccl_status_t read_once(const char *dir, const char *key, double timeout, double *elapsed) {
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

static void put_file(const char *path, const uint8_t *data, size_t len, mode_t mode) {
    unlink(path);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, data, len) == (ssize_t)len);
    CU_ASSERT_FATAL(fchmod(fd, mode) == 0);
    close(fd);
}

/* 5: torn, truncated, garbage, wrong-version, wrong-size and wrong-checksum files (here the
 * root's claim, the first file a reader reads) are refused; the reader waits until the
 * deadline and then says what it saw. Each case its own key: a bootstrap's rounds are numbered
 * after the bootstraps of that key this process made before. */
static void test_corrupt_files_refused(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], key[32];
    new_dir(dir, sizeof dir);
    uint8_t good[1024], bad[1024];
    struct {
        const char *name, *expect;
    } cases[] = {
        {"truncated", "torn, truncated"},    {"torn", "torn or truncated"}, {"garbage", "wrong magic"},
        {"version", "format version 9"},     {"world size", "world size 3"}, {"checksum", "checksum mismatch"},
        {"short", "has 50 bytes"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        snprintf(key, sizeof key, "corrupt%zu", i);
        snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.root", dir, key);
        size_t len = claim_file(good, sizeof good, key, 2, 60000);
        size_t n = len;
        memcpy(bad, good, len);
        if (i == 0) n = len - 20;                                   /* cut short */
        if (i == 1) bad[20] ^= 0x01;                                /* body size field torn */
        if (i == 2) for (size_t k = 0; k < n; k++) bad[k] = (uint8_t)(k * 131 + 7);
        if (i == 3) { bad[8] = 9; }                                 /* version 9 */
        if (i == 4) { /* world size 3, checksum fixed so only the size is wrong */
            n = claim_file(bad, sizeof bad, key, 3, 60000);
        }
        if (i == 5) bad[100] ^= 0xFF;                               /* a data byte */
        if (i == 6) n = 50;
        put_file(path, bad, n, 0600);
        double elapsed = 0;
        CU_ASSERT_EQUAL(read_once(dir, key, 0.5, &elapsed), HIDET_NCCL_ERROR_TIMEOUT);
        if (strstr(g_last, cases[i].expect) == NULL)
            fprintf(stderr, "case %s: '%s' not in: %s\n", cases[i].name, cases[i].expect, g_last);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_last, cases[i].expect));
        CU_ASSERT(elapsed >= 0.5 && elapsed < 2.0);
        unlink(path);
    }
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* 5 (cont.): a corrupt file is replaced by a good one before the deadline: accepted. */
static void test_corrupt_then_good(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], id[257];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/hidet-nccl.fixme.0.id", dir);
    uint8_t garbage[300];
    memset(garbage, 0x41, sizeof garbage);
    put_file(path, garbage, sizeof garbage, 0600);
    CU_ASSERT_EQUAL(run_job(dir, "fixme", 3, 1, 30, 300), 0);
    CU_ASSERT(all_same_id("fixme", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* 6: a root that never comes: the reader times out within the deadline, naming the path. */
static void test_root_never_comes(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    double elapsed = 0;
    CU_ASSERT_EQUAL(read_once(dir, "noroot", 1.0, &elapsed), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "hidet-nccl.noroot.0.id"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "from rank 0 (root)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "no claim from the root yet"));
    CU_ASSERT(elapsed >= 1.0 && elapsed < 2.0);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* its hello is gone too */
    /* Many readers at once, each its own process. */
    char key[] = "noroot8";
    CU_ASSERT_EQUAL(run_job(dir, key, 8, 1, 1.0, 5000) >= 7, 1);
}

/* A root (rank 0 of nranks, 2 unless set) broadcasting in a thread, while the test plays its
 * readers by hand. */
typedef struct {
    const char *dir, *key;
    double timeout;
    hidet_nccl_status_t st;
    char msg[4096];
    double took;
    int nranks;
} root_job_t;

static void *root_thread(void *arg) {
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

/* As rank `rank` of `world`: waits (up to wait_s) for round 0's claim of `key`, then puts a hello
 * answering it with a nonce of nonce_byte, as written by process pid of host (by default pid 1
 * of another host: a writer whose death nobody here can see). 0, or -1. */
static uint32_t g_fake_pid = 1;
static const char *g_fake_host = "elsewhere";
static int fake_hello_rank(const char *dir, const char *key, int nonce_byte, int rank, int world, double wait_s) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.root", dir, key);
    uint8_t buf[1024], hello[HN_BF_HEADER + HN_BF_HELLO_FIXED + 4], nonce[HN_BF_NONCE];
    hidet_nccl__bf_msg_t m;
    char why[512];
    for (int i = 0;; i++) {
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
        if (fd >= 0) close(fd);
        if (n > 0 && hidet_nccl__bf_parse(buf, (size_t)n, &m, why, sizeof why) == 0) break;
        if (i > wait_s * 100) return -1;
        usleep(10000);
    }
    memset(nonce, nonce_byte, sizeof nonce);
    size_t len = hidet_nccl__bf_encode_hello(hello, sizeof hello, key, 0, (uint32_t)world, (uint32_t)rank, nonce,
                                             m.nonce, g_fake_pid, g_fake_host, NULL, 0, 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.%s.0.hello.%d", dir, key, rank);
    char tmp[PATH_MAX + 80];
    snprintf(tmp, sizeof tmp, "%s.test", path);
    put_file(tmp, hello, len, 0600);
    return rename(tmp, path);
}

static int fake_hello(const char *dir, const char *key, int nonce_byte, double wait_s) {
    return fake_hello_rank(dir, key, nonce_byte, 1, 2, wait_s);
}

/* 6 (cont.): readers that never come: the root times out naming them. */
static void test_readers_never_come(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = "lonely";
    p.rank = 0;
    p.nranks = 4;
    hidet_nccl_bootstrap_h bs;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_SUCCESS, NULL);
    char buf[16] = "x";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, sizeof buf, 0, 0.5), HIDET_NCCL_ERROR_TIMEOUT,
                     "1, 2, 3 (3 of 4 ranks)");
    hidet_nccl_bootstrap_destroy(bs);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
    /* A reader that answered the claim and died: the root publishes, then waits for the hello
     * to go, within the one deadline of the round (not twice it). */
    root_job_t job = {dir, "lonely2", 0.5, 0, "", 0, 2};
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello(dir, "lonely2", 7, 5.0), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, "did not take it (waited 0.5 s)"));
    CU_ASSERT(job.took >= 0.5 && job.took < 0.9);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/hidet-nccl.lonely2.0.hello.1", dir);
    unlink(path);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* the announce and the claim were removed */
}

/* Issue 15, item 7: a reader whose deadline passed after it answered (its hello renamed to
 * .gaveup, as a reader does) fails the round on the root, which would otherwise report
 * success for bytes nobody took; the root removes the .gaveup file. */
static void test_reader_gave_up(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], quit[PATH_MAX + 80];
    new_dir(dir, sizeof dir);
    root_job_t job = {dir, "quitter", 10, 0, "", 0, 2};
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello(dir, "quitter", 9, 5.0), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.quitter.0.id", dir);
    for (int i = 0; i < 500 && access(path, F_OK) != 0; i++) usleep(10000); /* the root published */
    snprintf(path, sizeof path, "%s/hidet-nccl.quitter.0.hello.1", dir);
    snprintf(quit, sizeof quit, "%s.gaveup", path);
    CU_ASSERT_EQUAL(rename(path, quit), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, "rank 1 gave up before taking it"));
    CU_ASSERT(job.took < 5);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
    /* A real reader with a short deadline, the root never coming: its hello is renamed, then
     * gone with the round's other leftovers when a root ends a round of that key. */
    CU_ASSERT_EQUAL(read_once(dir, "quitter2", 0.3, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_EQUAL(count_files(dir, ".gaveup"), 0); /* it never answered: there was no claim */
}

/* Issue 15, item 6: a second answer to one claim for the same rank (another job with the same
 * key) is a collision: the root fails and marks its claim, so that everyone of both jobs does. */
static void test_two_answers_collide(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64];
    new_dir(dir, sizeof dir);
    root_job_t job = {dir, "twice", 60, 0, "", 0, 3}; /* long: under valgrind the root is slow */
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 1, 1, 3, 30.0), 0); /* rank 1 of one job */
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 3, 2, 3, 30.0), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.twice.0.id", dir);
    for (int i = 0; i < 5000 && access(path, F_OK) != 0; i++) usleep(10000); /* the root published */
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 2, 1, 3, 30.0), 0); /* then rank 1 of the other job */
    /* The claim is marked collided for the others to see while the root is still in its call
     * (issue 27, item 23: it lingers a moment, then removes it). */
    snprintf(path, sizeof path, "%s/hidet-nccl.twice.0.root", dir);
    int marked = 0;
    for (int i = 0; i < 3000 && !marked; i++) {
        uint8_t buf[1024];
        int fd = open(path, O_RDONLY);
        ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
        if (fd >= 0) close(fd);
        hidet_nccl__bf_msg_t m;
        char why[512];
        marked = n > 0 && hidet_nccl__bf_parse(buf, (size_t)n, &m, why, sizeof why) == 0 &&
                 m.kind == HN_BF_KIND_CLAIM && (m.flags & HN_BF_CLAIM_COLLIDED);
        if (!marked) usleep(1000);
    }
    pthread_join(t, NULL);
    CU_ASSERT(marked);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, "two processes answered this round's claim as rank 1"));
    CU_ASSERT(job.took < 10); /* a collision fails at once, not at the deadline (60 s) */
    CU_ASSERT_EQUAL(count_files(dir, ".root"), 0); /* then removed by its root */
}

/* Issue 15, item 6: two jobs started with the same key in one directory, many times: every
 * pair reports the collision (processes fail), and no pair has a rank holding the other job's
 * bytes without that failure. (Without a secret only the job has, a process of the other job
 * can take the bytes before the collision is seen; it never goes unreported: docs/bootstrap_file.md.) */
static void test_same_key_jobs(void) {
    char dir[PATH_MAX], a[2 * 128 + 1], b[2 * 128 + 1], root_a[2 * 128 + 1], root_b[2 * 128 + 1];
    new_dir(dir, sizeof dir);
    int wrong = 0, detected = 0, silent = 0, pairs = 12;
    for (int pair = 0; pair < pairs; pair++) {
        char key[32], la[32], lb[32];
        snprintf(key, sizeof key, "shared%d", pair);
        snprintf(la, sizeof la, "A%d", pair);
        snprintf(lb, sizeof lb, "B%d", pair);
        pid_t pids[8];
        for (int r = 3; r >= 0; r--) { /* both roots late: every reader waits, both roots meet */
            pids[2 * r] = spawn_as(dir, key, la, r, 4, 1, 5, r == 0 ? 200 : 0);
            pids[2 * r + 1] = spawn_as(dir, key, lb, r, 4, 1, 5, r == 0 ? 200 : 0);
        }
        int failed = 0;
        for (int i = 0; i < 8; i++) {
            int ws;
            waitpid(pids[i], &ws, 0);
            failed += !(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
        }
        detected += failed > 0;
        id_of(la, 0, 0, root_a);
        id_of(lb, 0, 0, root_b);
        int wrong_here = 0;
        for (int r = 1; r < 4; r++) { /* a rank that has bytes has its own root's */
            id_of(la, r, 0, a);
            id_of(lb, r, 0, b);
            wrong_here += a[0] && strcmp(a, root_a) != 0;
            wrong_here += b[0] && strcmp(b, root_b) != 0;
        }
        wrong += wrong_here;
        silent += wrong_here > 0 && failed == 0;
    }
    printf("\n  %d of %d pairs of same-key jobs reported the collision; %d ranks took the other job's bytes, in "
           "pairs that reported it\n", detected, pairs, wrong);
    CU_ASSERT_EQUAL(silent, 0);
    CU_ASSERT_EQUAL(detected, pairs);
    /* Issue 27, item 23: the collided claims were removed by their holders once nobody needed
     * them; item 19: a clean job with a key that collided, its readers first, works right away. */
    int claims = count_files(dir, ".root");
    if (claims) printf("  %d claims left behind\n", claims);
    CU_ASSERT_EQUAL(claims, 0);
    CU_ASSERT_EQUAL(run_job(dir, "shared0", 4, 1, 30, 300), 0);
}

/* Issue 27, item 5: the same, each job with its own secret (HIDET_NCCL_JOB_SECRET, as
 * hidet-nccl-run gives every job): a rank never holds the other job's bytes, collision or not,
 * since a reader takes only an announce whose MAC its job's secret makes. Without secrets the
 * test above allows a taken-then-reported collision; here none may be taken. */
static void test_same_key_jobs_with_secrets(void) {
    char dir[PATH_MAX], mine[2 * 128 + 1], root[2][2 * 128 + 1];
    new_dir(dir, sizeof dir);
    int wrong = 0, pairs = 20;
    const char *labels[2] = {"SA", "SB"}, *secrets[2] = {"secret-of-job-A-0123456789", "secret-of-job-B-0123456789"};
    for (int pair = 0; pair < pairs; pair++) {
        char key[32], label[2][32];
        snprintf(key, sizeof key, "sec%d", pair);
        pid_t pids[8];
        for (int r = 3; r >= 0; r--)
            for (int j = 0; j < 2; j++) {
                snprintf(label[j], sizeof label[j], "%s%d", labels[j], pair);
                setenv("HIDET_NCCL_JOB_SECRET", secrets[j], 1);
                pids[2 * r + j] = spawn_as(dir, key, label[j], r, 4, 1, 5, r == 0 ? 200 : 0);
            }
        unsetenv("HIDET_NCCL_JOB_SECRET");
        for (int i = 0; i < 8; i++) waitpid(pids[i], NULL, 0);
        for (int j = 0; j < 2; j++) {
            id_of(label[j], 0, 0, root[j]);
            for (int r = 1; r < 4; r++) {
                id_of(label[j], r, 0, mine);
                wrong += mine[0] && strcmp(mine, root[j]) != 0;
            }
        }
    }
    printf("\n  %d pairs of same-key jobs with their own secrets: %d ranks took the other job's bytes\n", pairs, wrong);
    CU_ASSERT_EQUAL(wrong, 0);
    /* A root with a secret and a reader without one: the root takes no answer without its MAC, and
     * the round ends at the deadline with the reason on the root's side. */
    setenv("HIDET_NCCL_JOB_SECRET", secrets[0], 1);
    g_keep_stderr = 1;
    pid_t r0 = spawn_as(dir, "mixed", "mixed", 0, 2, 1, 2, 0);
    unsetenv("HIDET_NCCL_JOB_SECRET");
    pid_t r1 = spawn_as(dir, "mixed", "mixed", 1, 2, 1, 2, 0);
    g_keep_stderr = 0;
    int ws0, ws1;
    waitpid(r0, &ws0, 0);
    waitpid(r1, &ws1, 0);
    CU_ASSERT(!(WIFEXITED(ws0) && WEXITSTATUS(ws0) == 0));
    CU_ASSERT(!(WIFEXITED(ws1) && WEXITSTATUS(ws1) == 0));
    char err[PATH_MAX + 64], text[8192] = "";
    size_t used = 0;
    for (int r = 0; r < 2; r++) {
        snprintf(err, sizeof err, "%s/out.mixed.%d.err", g_base, r);
        FILE *f = fopen(err, "r");
        if (f) {
            used += fread(text + used, 1, sizeof text - 1 - used, f);
            fclose(f);
        }
    }
    text[used] = '\0';
    CU_ASSERT_PTR_NOT_NULL(strstr(text, "no job secret"));
}

/* Issue 15, item 5: bootstraps one after the other from the same environment (hidet_nccl_init
 * called again), 4 ranks x 20: every round every rank gets that round's bytes. */
static void test_fresh_bootstrap_each_round(void) {
    char dir[PATH_MAX], ids[20][2 * 128 + 1];
    new_dir(dir, sizeof dir);
    CU_ASSERT_EQUAL(run_job(dir, "again", 4, -20, 30, 0), 0);
    for (int round = 0; round < 20; round++) {
        CU_ASSERT(all_same_id("again", 4, round, ids[round]));
        if (round) CU_ASSERT_STRING_NOT_EQUAL(ids[round], ids[round - 1]);
    }
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Issue 15, item 14: temporary files of writers killed mid-write are removed by the root
 * that ends that round (issue 27: only those of writers of this host that are gone; a live
 * writer's, or one of another host, may be being written). */
static pid_t dead_pid(void);
static void this_host(char host[HN_BF_HOST_BYTES + 1]);
static void test_killed_writers_leftovers(void) {
    char dir[PATH_MAX], path[PATH_MAX + 96], id[2 * 128 + 1], host[HN_BF_HOST_BYTES + 1];
    new_dir(dir, sizeof dir);
    this_host(host);
    const char *names[] = {"hello.1", "hello.2", "id", "root"};
    for (int i = 0; i < 4; i++) {
        snprintf(path, sizeof path, "%s/hidet-nccl.killed.0.%s.tmp.%s.%d.0badf00%d", dir, names[i], host,
                 (int)dead_pid(), i);
        put_file(path, (const uint8_t *)"half", 4, 0600);
    }
    snprintf(path, sizeof path, "%s/hidet-nccl.killed.0.hello.2.tmp.%s.%d.c0ffee00", dir, host, (int)getpid());
    put_file(path, (const uint8_t *)"being written", 13, 0600); /* a live writer's: kept */
    snprintf(path, sizeof path, "%s/hidet-nccl.killed.0.hello.1.tmp.elsewhere.%d.c0ffee01", dir, (int)dead_pid());
    put_file(path, (const uint8_t *)"being written", 13, 0600); /* another host's: kept */
    /* Round 5 of key "killed.0" begins like round 0 of key "killed": a mark and a dead writer's
     * temporary file of that other key are not this round's, and stay. */
    snprintf(path, sizeof path, "%s/hidet-nccl.killed.0.5.hello.1.gaveup", dir);
    put_file(path, (const uint8_t *)"a mark", 6, 0600);
    snprintf(path, sizeof path, "%s/hidet-nccl.killed.0.5.hello.2.tmp.%s.%d.0ddba11", dir, host, (int)dead_pid());
    put_file(path, (const uint8_t *)"half", 4, 0600);
    CU_ASSERT_EQUAL(run_job(dir, "killed", 3, 1, 30, 0), 0);
    CU_ASSERT(all_same_id("killed", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 4);
    CU_ASSERT_EQUAL(count_files(dir, "c0ffee0"), 2);
    CU_ASSERT_EQUAL(count_files(dir, "killed.0.5."), 2);
}

/* 7: a symlink at the path, a file owned by another user, a file writable by group or
 * others, a directory writable by others without the sticky bit: refused with a message. */
/* Case i of the unsafe-file test: its own key (a bootstrap's rounds follow the earlier ones of
 * its key in this process), the path of that key's claim, cleared, and a good claim in good. */
static size_t unsafe_case(const char *dir, int i, char *key, char *path, uint8_t *good) {
    snprintf(key, 32, "unsafe%d", i);
    snprintf(path, PATH_MAX + 64, "%s/hidet-nccl.%s.0.root", dir, key);
    unlink(path);
    return claim_file(good, 1024, key, 2, 60000);
}

static void test_unsafe_files_refused(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], target[PATH_MAX + 64], key[32];
    new_dir(dir, sizeof dir);
    uint8_t good[1024];
    snprintf(target, sizeof target, "%s/elsewhere", dir);
    put_file(target, good, unsafe_case(dir, 1, key, path, good), 0600);
    CU_ASSERT_FATAL(symlink(target, path) == 0);
    CU_ASSERT_EQUAL(read_once(dir, key, 0.3, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "is a symbolic link; refused"));
    put_file(path, good, unsafe_case(dir, 2, key, path, good), 0622);
    CU_ASSERT_EQUAL(read_once(dir, key, 0.3, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "writable by group or others"));
    put_file(path, good, unsafe_case(dir, 3, key, path, good), 0600);
    if (geteuid() == 0) { /* root can give the file away; elsewhere this case cannot be made */
        CU_ASSERT_FATAL(chown(path, 65534, 65534) == 0);
        CU_ASSERT_EQUAL(read_once(dir, key, 0.3, NULL), HIDET_NCCL_ERROR_TIMEOUT);
        CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "owned by uid 65534"));
    } else {
        printf("\n  (not root: the other-owner case is not made here)\n");
    }
    unlink(path);
    unlink(target);
    char open_dir[PATH_MAX + 16];
    snprintf(open_dir, sizeof open_dir, "%s/world", dir);
    mkdir(open_dir, 0777);
    chmod(open_dir, 0777);
    CU_ASSERT_EQUAL(read_once(open_dir, "unsafe", 0.3, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "without the sticky bit"));
    chmod(open_dir, 01777); /* like /tmp: fine */
    CU_ASSERT_EQUAL(read_once(open_dir, "unsafe", 0.2, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    /* Issue 15, item 15: writable by its group without the sticky bit: refused the same way. */
    chmod(open_dir, 0770);
    CU_ASSERT_EQUAL(read_once(open_dir, "unsafe", 0.3, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "writable by its group without the sticky bit (mode 0770,"));
    chmod(open_dir, 01770);
    CU_ASSERT_EQUAL(read_once(open_dir, "unsafe", 0.2, NULL), HIDET_NCCL_ERROR_TIMEOUT);
}

/* 8: after a crashed root (killed while waiting), the next job works, with a new key and
 * with the same key (stale hellos of the dead job in the way). */
static void test_after_crashed_root(void) {
    char dir[PATH_MAX], id[257];
    new_dir(dir, sizeof dir);
    pid_t root = spawn(dir, "crashy", 0, 3, 1, 30, 0);
    pid_t reader = spawn(dir, "crashy", 1, 3, 1, 30, 0);
    for (int i = 0; i < 1000 && count_files(dir, "crashy") < 2; i++) usleep(10 * 1000); /* the claim and a hello */
    kill(root, SIGKILL);
    kill(reader, SIGKILL); /* its hello stays behind, as after a crash */
    waitpid(root, NULL, 0);
    waitpid(reader, NULL, 0);
    CU_ASSERT(count_files(dir, "crashy") >= 1);
    CU_ASSERT_EQUAL(run_job(dir, "fresh", 3, 1, 30, 0), 0);
    CU_ASSERT(all_same_id("fresh", 3, 0, id));
    CU_ASSERT_EQUAL(run_job(dir, "crashy", 3, 1, 30, 0), 0);
    CU_ASSERT(all_same_id("crashy", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, "fresh"), 0);
    CU_ASSERT_EQUAL(count_files(dir, "crashy"), 0);
}

static void test_bad_params(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    hidet_nccl_bootstrap_h bs;
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.rank = 0;
    p.nranks = 2;
    p.job_key = "bad/key";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "'bad/key'");
    p.job_key = "ok";
    p.rank = 2;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank 2 of 2");
    p.rank = 0;
    p.dir = "/nonexistent/dir";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_BOOTSTRAP, "/nonexistent/dir");
    p.dir = NULL;
    unsetenv("HIDET_NCCL_RENDEZVOUS_DIR");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_RENDEZVOUS_DIR");
    p.dir = dir;
    p.rank = -1;
    unsetenv("HIDET_NCCL_RANK");
    unsetenv("RANK");
    setenv("SLURM_PROCID", "x7", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "SLURM_PROCID='x7'");
    unsetenv("SLURM_PROCID");
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_RANK");
    setenv("HIDET_NCCL_POLL_MAX_MS", "fast", 1);
    hidet_nccl_settings_reload();
    p.rank = 0;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "HIDET_NCCL_POLL_MAX_MS='fast'");
    unsetenv("HIDET_NCCL_POLL_MAX_MS");
    hidet_nccl_file_bootstrap_params_t old = p;
    old.size = 4;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&old, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "params->size");
    /* From the environment, as the launcher and Slurm give it. */
    setenv("SLURM_JOB_ID", "4242", 1);
    setenv("SLURM_STEP_ID", "3", 1);
    setenv("SLURM_PROCID", "1", 1);
    setenv("SLURM_NTASKS", "4", 1);
    setenv("HIDET_NCCL_RENDEZVOUS_DIR", dir, 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    int rank = -1, size = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_rank(bs, &rank, &size), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(rank, 1);
    CU_ASSERT_EQUAL(size, 4);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    unsetenv("SLURM_PROCID");
    unsetenv("SLURM_NTASKS");
    unsetenv("HIDET_NCCL_RENDEZVOUS_DIR");
    hidet_nccl_settings_reload();
}


/* ---------------------------------------------------------------- issue 27 */

/* Waits for pid; 1 if it exited with status 0. */
static int exited_ok(pid_t pid) {
    int ws = 0;
    waitpid(pid, &ws, 0);
    return WIFEXITED(ws) && WEXITSTATUS(ws) == 0;
}

/* The pid of a process that is gone: a child that exited and was reaped. */
static pid_t dead_pid(void) {
    pid_t pid = fork();
    if (pid == 0) _exit(0);
    waitpid(pid, NULL, 0);
    return pid;
}

static void this_host(char host[HN_BF_HOST_BYTES + 1]) {
    if (gethostname(host, HN_BF_HOST_BYTES) != 0) host[0] = '\0';
    host[HN_BF_HOST_BYTES] = '\0';
}

/* Puts a claim on round 0 of `key` (root 0), held hold_ms more, of process pid on host. */
static void put_claim(const char *dir, const char *key, uint32_t world, long hold_ms, uint32_t pid, uint32_t flags,
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

/* 1 once path exists, 0 if it did not within wait_s. */
static int wait_for(const char *path, double wait_s) {
    for (int i = 0; i <= wait_s * 200; i++) {
        if (access(path, F_OK) == 0) return 1;
        usleep(5000);
    }
    return 0;
}

/* The stderr a process started with g_keep_stderr left ("" if none). */
static void err_of(const char *label, int rank, char *out, size_t n) {
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/out.%s.%d.err", g_base, label, rank);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = '\0';
    fclose(f);
}

/* Item 16: a stale .gaveup (any file at hello.<r>.gaveup, even an empty one) never fails the
 * next round with that key: only a mark that answers this round's claim counts. */
static void test_stale_gaveup_ignored(void) {
    char dir[PATH_MAX], path[PATH_MAX + 96], id[257];
    new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/hidet-nccl.stale16.0.hello.1.gaveup", dir);
    put_file(path, (const uint8_t *)"", 0, 0600);
    uint8_t hello[1024], nonce[HN_BF_NONCE], old_claim[HN_BF_NONCE];
    memset(nonce, 0x21, sizeof nonce);
    memset(old_claim, 0x42, sizeof old_claim); /* an older root's claim */
    size_t len = HELLO_FILE(hello, "stale16", 3, 2, nonce, old_claim);
    snprintf(path, sizeof path, "%s/hidet-nccl.stale16.0.hello.2.gaveup", dir);
    put_file(path, hello, len, 0600);
    CU_ASSERT_EQUAL(run_job(dir, "stale16", 3, 1, 30, 0), 0);
    CU_ASSERT(all_same_id("stale16", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* the root removed them with the round's leftovers */
    /* As it happens: a reader answers a root's claim (a live one, of a root on another host, held
     * 1.5 s), the root fails to come, the reader gives up at its deadline and leaves its
     * .gaveup; the job run again with the same key once that claim expired must work. */
    put_claim(dir, "stale16b", 2, 1500, 1, 0, "elsewhere");
    CU_ASSERT_EQUAL(read_once(dir, "stale16b", 0.8, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_EQUAL(count_files(dir, "stale16b.0.hello.1.gaveup"), 1);
    usleep(900 * 1000); /* the claim expires */
    CU_ASSERT_EQUAL(run_job(dir, "stale16b", 2, 1, 30, 0), 0);
    CU_ASSERT(all_same_id("stale16b", 2, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 17: two processes as rank 1 and one root, one key, one directory, many times: the root
 * never says its bytes were taken when every reader failed (a reader that fails withdraws its
 * answer with a mark that the root counts as "not taken"). */
static void test_two_readers_one_rank(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    int runs = 40, root_ok = 0, root_ok_alone = 0, wrong = 0;
    for (int i = 0; i < runs; i++) {
        char key[32], la[32], lb[32], lr[32], root_id[257], a_id[257], b_id[257];
        snprintf(key, sizeof key, "dup%d", i);
        snprintf(la, sizeof la, "dupA%d", i);
        snprintf(lb, sizeof lb, "dupB%d", i);
        snprintf(lr, sizeof lr, "dupR%d", i);
        pid_t a = spawn_as(dir, key, la, 1, 2, -1, 1, 0);
        pid_t b = spawn_as(dir, key, lb, 1, 2, -1, 1, 0);
        pid_t r = spawn_as(dir, key, lr, 0, 2, -1, 1, 0);
        int ok_a = exited_ok(a), ok_b = exited_ok(b), ok_r = exited_ok(r);
        root_ok += ok_r;
        root_ok_alone += ok_r && !ok_a && !ok_b;
        id_of(lr, 0, 0, root_id);
        id_of(la, 1, 0, a_id);
        id_of(lb, 1, 0, b_id);
        wrong += ok_r && ((ok_a && strcmp(a_id, root_id) != 0) + (ok_b && strcmp(b_id, root_id) != 0));
    }
    printf("\n  %d of %d roots said OK; %d of them while every reader failed\n", root_ok, runs, root_ok_alone);
    CU_ASSERT_EQUAL(root_ok_alone, 0);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* Item 18: a reader killed after it answered and started again is that rank coming back, not
 * a second job: the hello of a dead process of this host is stale. Here the root still waits
 * for rank 2 when rank 1 dies and comes back. */
static void test_restarted_reader(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], id[257];
    new_dir(dir, sizeof dir);
    pid_t root = spawn(dir, "restart", 0, 3, 1, 30, 0);
    pid_t first = spawn(dir, "restart", 1, 3, 1, 30, 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.restart.0.hello.1", dir);
    CU_ASSERT_FATAL(wait_for(path, 20));
    kill(first, SIGKILL);
    waitpid(first, NULL, 0);
    CU_ASSERT_EQUAL(access(path, F_OK), 0); /* its answer stays, as after a crash */
    pid_t again = spawn(dir, "restart", 1, 3, 1, 30, 0);
    usleep(200 * 1000);
    pid_t last = spawn(dir, "restart", 2, 3, 1, 30, 0);
    CU_ASSERT(exited_ok(again));
    CU_ASSERT(exited_ok(last));
    CU_ASSERT(exited_ok(root));
    CU_ASSERT(all_same_id("restart", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 18, once the announce is out: rank 1's first process answered and died before it took
 * the bytes; rank 1 started again replaces that answer, and the root rewrites the announce for
 * it (a broadcast's bytes are the root's alone, so no rank can have taken other bytes). */
static void test_restarted_after_publish(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], id[257];
    new_dir(dir, sizeof dir);
    pid_t first = fork();
    if (first == 0) { /* rank 1's first process: it answers, then hangs until killed */
        char host[HN_BF_HOST_BYTES + 1];
        this_host(host);
        g_fake_pid = (uint32_t)getpid();
        g_fake_host = host;
        if (fake_hello(dir, "restart2", 5, 20.0) != 0) _exit(1);
        for (;;) pause();
    }
    pid_t root = spawn(dir, "restart2", 0, 2, -1, 30, 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.restart2.0.id", dir);
    CU_ASSERT_FATAL(wait_for(path, 20)); /* the root took the answer and published */
    kill(first, SIGKILL);
    waitpid(first, NULL, 0);
    pid_t again = spawn(dir, "restart2", 1, 2, -1, 30, 0);
    CU_ASSERT(exited_ok(again));
    CU_ASSERT(exited_ok(root));
    CU_ASSERT(all_same_id("restart2", 2, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 19: a collided claim whose root is gone (a dead process of this host) is stale: a clean
 * job with the same key, its readers there before its root, works. */
static void test_collided_claim_of_dead_root(void) {
    char dir[PATH_MAX], host[HN_BF_HOST_BYTES + 1], id[257];
    new_dir(dir, sizeof dir);
    this_host(host);
    put_claim(dir, "dead19", 3, 60000, (uint32_t)dead_pid(), HN_BF_CLAIM_COLLIDED, host);
    CU_ASSERT_EQUAL(run_job(dir, "dead19", 3, 1, 30, 500), 0);
    CU_ASSERT(all_same_id("dead19", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 20: the rendezvous directory and every directory above it must be this user's or root's
 * and not writable by others without the sticky bit (else another user can rename the
 * directory away and put her own in its place); a symbolic link on the way must be this user's
 * or root's. The second-user cases with a real second user: tests/bootstrap_file_users_test.sh. */
static void test_directory_and_ancestors(void) {
    char dir[PATH_MAX], a[PATH_MAX + 64], b[PATH_MAX + 96], link[PATH_MAX + 96];
    new_dir(dir, sizeof dir);
    snprintf(a, sizeof a, "%s/open", dir); /* 0777, no sticky bit: the directory in it can be renamed away */
    mkdir(a, 0777);
    chmod(a, 0777);
    snprintf(b, sizeof b, "%s/rdv", a);
    mkdir(b, 0700);
    CU_ASSERT_EQUAL(read_once(b, "anc", 0.2, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    if (strstr(g_last, a) == NULL || strstr(g_last, "writable by others without the sticky bit (mode 0777") == NULL)
        fprintf(stderr, "parent 0777: %s\n", g_last);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, a));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "writable by others without the sticky bit (mode 0777"));
    snprintf(b, sizeof b, "%s/deeper/rdv", a); /* a grandparent: the parent can be renamed away */
    snprintf(link, sizeof link, "%s/deeper", a);
    mkdir(link, 0755);
    mkdir(b, 0700);
    CU_ASSERT_EQUAL(read_once(b, "anc", 0.2, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "mode 0777"));
    chmod(a, 01777); /* like /tmp: what is in it can be renamed by its owner only */
    CU_ASSERT_EQUAL(read_once(b, "anc", 0.2, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    snprintf(b, sizeof b, "%s/rdv", a);
    snprintf(link, sizeof link, "%s/link", a); /* this user's link to this user's directory: fine */
    CU_ASSERT_FATAL(symlink(b, link) == 0);
    CU_ASSERT_EQUAL(read_once(link, "anc", 0.2, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    if (geteuid() != 0) {
        printf("\n  (not root: the other-owner cases are made by tests/bootstrap_file_users_test.sh only)\n");
        return;
    }
    CU_ASSERT_FATAL(lchown(link, 65534, 65534) == 0); /* its owner could point it elsewhere */
    CU_ASSERT_EQUAL(read_once(link, "anc", 0.2, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    if (strstr(g_last, "owned by uid 65534") == NULL) fprintf(stderr, "foreign link: %s\n", g_last);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "owned by uid 65534"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, link));
    CU_ASSERT_FATAL(chown(b, 65534, 65534) == 0); /* another user's directory, even a private one */
    CU_ASSERT_EQUAL(read_once(b, "anc", 0.2, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "owned by uid 65534"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, b));
    chmod(b, 01777); /* ... and one with the sticky bit: its owner may still remove every file in it */
    CU_ASSERT_EQUAL(read_once(b, "anc", 0.2, NULL), HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "owned by uid 65534"));
}

/* Item 22: with a slow file system (300 ms per operation on the directory) and a deadline of
 * 1 s, the deadline bounds the whole call, and the message says how long it really waited.
 * The root (of 8 ranks that never come) and a reader (that answers a live claim whose announce
 * never comes) run in processes of their own with the slow wrapper of file_bootstrap_peer. */
static double number_after(const char *text, const char *tag) {
    const char *at = strstr(text, tag);
    return at ? atof(at + strlen(tag)) : -1;
}

static void test_slow_file_system(void) {
    char dir[PATH_MAX], err[8192];
    new_dir(dir, sizeof dir);
    put_claim(dir, "slow22r", 2, 60000, 1, 0, "elsewhere");
    g_slow_ms = 300;
    g_keep_stderr = 1;
    pid_t root = spawn_as(dir, "slow22", "slow22", 0, 8, 1, 1.0, 0);
    pid_t reader = spawn_as(dir, "slow22r", "slow22r", 1, 2, 1, 1.0, 0);
    g_slow_ms = 0;
    g_keep_stderr = 0;
    CU_ASSERT(!exited_ok(root));
    CU_ASSERT(!exited_ok(reader));
    const struct {
        const char *label;
        int rank;
        double bound;
    } who[] = {{"slow22", 0, SLOW_ROOT_BOUND}, {"slow22r", 1, SLOW_READER_BOUND}};
    for (int i = 0; i < 2; i++) {
        err_of(who[i].label, who[i].rank, err, sizeof err);
        double took = number_after(err, "(after "), said = number_after(err, " waited ");
        printf("\n  rank %d: the call took %.2f s, its message says it waited %.1f s: %.300s", who[i].rank, took, said,
               err);
        CU_ASSERT(took > 0 && took <= who[i].bound);
        CU_ASSERT(said >= 1.0 && said <= took + 0.05 && took - said <= SLOW_CLEANUP_S);
    }
}

/* Item 23: a directory, or another user's file, at this rank's hello path: the reader fails at
 * once and says what is there (not "its hello file kept coming back"). */
static void test_hello_path_taken(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64];
    new_dir(dir, sizeof dir);
    chmod(dir, 01777); /* shared, like /tmp */
    put_claim(dir, "taken23", 2, 60000, 1, 0, "elsewhere");
    snprintf(path, sizeof path, "%s/hidet-nccl.taken23.0.hello.1", dir);
    mkdir(path, 0700);
    double elapsed = 0;
    CU_ASSERT_EQUAL(read_once(dir, "taken23", 5, &elapsed), HIDET_NCCL_ERROR_BOOTSTRAP);
    if (strstr(g_last, "hello.1 is a directory") == NULL) fprintf(stderr, "a directory: %s\n", g_last);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "hello.1 is a directory"));
    CU_ASSERT(elapsed < 2);
    rmdir(path);
    if (geteuid() != 0) {
        printf("\n  (not root: the other user's file is made by tests/bootstrap_file_users_test.sh only)\n");
        return;
    }
    put_claim(dir, "taken23b", 2, 60000, 1, 0, "elsewhere");
    snprintf(path, sizeof path, "%s/hidet-nccl.taken23b.0.hello.1", dir);
    put_file(path, (const uint8_t *)"not yours", 9, 0644);
    CU_ASSERT_FATAL(chown(path, 65534, 65534) == 0);
    CU_ASSERT_EQUAL(read_once(dir, "taken23b", 5, &elapsed), HIDET_NCCL_ERROR_BOOTSTRAP);
    if (strstr(g_last, "owned by uid 65534") == NULL) fprintf(stderr, "a foreign file: %s\n", g_last);
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, "owned by uid 65534"));
    CU_ASSERT_PTR_NOT_NULL(strstr(g_last, path));
    CU_ASSERT(elapsed < 2);
    CU_ASSERT_EQUAL(access(path, F_OK), 0); /* left as it is: not this user's to remove */
}

/* Item 23: the key made from Slurm's job and step ids is kept whole (two jobs whose ids differ
 * past the 24th character get different keys), and refused, naming the variables, when it
 * does not fit in a key. */
static void test_slurm_key_whole(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    unsetenv("HIDET_NCCL_JOB_KEY");
    setenv("SLURM_JOB_ID", "1234567890123456789012345678", 1);
    setenv("SLURM_STEP_ID", "7", 1);
    hidet_nccl_settings_reload();
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.rank = 0;
    p.nranks = 2;
    hidet_nccl_bootstrap_h bs;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_SUCCESS, NULL);
    char buf[16] = "x";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, buf, sizeof buf, 0, 0.2), HIDET_NCCL_ERROR_TIMEOUT,
                     "hidet-nccl.slurm-1234567890123456789012345678.7.");
    hidet_nccl_bootstrap_destroy(bs);
    setenv("SLURM_JOB_ID", "123456789012345678901234567890123456789012345678901234567890", 1);
    hidet_nccl_settings_reload();
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file(&p, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "SLURM_JOB_ID");
    unsetenv("SLURM_JOB_ID");
    unsetenv("SLURM_STEP_ID");
    hidet_nccl_settings_reload();
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

int main(int argc, char **argv) {
    if (argc < 2 || realpath(argv[1], g_peer) == NULL) {
        fprintf(stderr, "usage: %s PATH_TO_file_bootstrap_peer\n", argv[0]);
        return 1;
    }
    const char *t = getenv("TEST_TMPDIR"); /* outside Bazel (valgrind in CI): a fresh directory per run */
    snprintf(g_base, sizeof g_base, "%s/bootstrap_file.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(g_base) == NULL) return 1;
    static const hn_test_t tests[] = {
        {"1: 2 ranks get the root's bytes", test_2_ranks},
        {"1: 8 ranks", test_8_ranks},
        {"1: 64 ranks", test_64_ranks},
        {"1: 256 ranks", test_256_ranks},
        {"2: a stale valid file is never accepted", test_stale_file_not_accepted},
        {"3: two jobs in one directory", test_two_jobs_one_dir},
        {"4: each round a fresh id", test_rounds_get_fresh_ids},
        {"5: corrupt files refused until the deadline", test_corrupt_files_refused},
        {"5: a corrupt file replaced by a good one", test_corrupt_then_good},
        {"6: a root that never comes", test_root_never_comes},
        {"6: readers that never come", test_readers_never_come},
        {"7: unsafe files and directories refused", test_unsafe_files_refused},
        {"8: after a crashed root", test_after_crashed_root},
        {"a reader that gave up fails the round on the root", test_reader_gave_up},
        {"two answers to one claim collide", test_two_answers_collide},
        {"27.5: same-key jobs with their own secrets never take each other's bytes", test_same_key_jobs_with_secrets},
        {"two jobs with one key never swap bytes", test_same_key_jobs},
        {"a fresh bootstrap each round", test_fresh_bootstrap_each_round},
        {"leftovers of killed writers removed", test_killed_writers_leftovers},
        {"parameters and environment", test_bad_params},
        {"27.16: a stale .gaveup does not fail the next round", test_stale_gaveup_ignored},
        {"27.17: two readers of one rank: no root success when every reader failed", test_two_readers_one_rank},
        {"27.18: a killed and restarted reader is not a second job", test_restarted_reader},
        {"27.18: ... and after the root published", test_restarted_after_publish},
        {"27.19: a collided claim of a dead root is stale", test_collided_claim_of_dead_root},
        {"27.20: the directory and every directory above it", test_directory_and_ancestors},
        {"27.22: a slow file system: the deadline bounds the call", test_slow_file_system},
        {"27.23: a directory or a foreign file at a hello path", test_hello_path_taken},
        {"27.23: a Slurm key is kept whole or refused", test_slurm_key_whole},
        {NULL, NULL},
    };
    return hn_run_tests("bootstrap_file", tests);
}
