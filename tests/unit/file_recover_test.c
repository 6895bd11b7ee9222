/* The shared-file bootstrap's recovery round, case by case, with real processes (forked from
 * this test, each a rank running a little script of calls): a rank alive that never joins is
 * left out after wait_s and told so when it comes; decisions of another round or another job are
 * never taken; corrupt and foreign files are refused with a message; a decider that dies before
 * deciding is taken over; a wait on a dead peer of this host, or on one that went to recover,
 * fails at once; nothing is left in the directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

static char g_base[PATH_MAX];
static int g_case;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void new_dir(char *out, size_t n) {
    snprintf(out, n, "%s/case%d", g_base, ++g_case);
    mkdir(out, 0700);
}

/* Files in dir whose names contain `part` (listed on stdout when there are any). */
static int count_files(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    if (d == NULL) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.' && strstr(e->d_name, part) != NULL) {
            printf("\n    left: %s", e->d_name);
            n++;
        }
    closedir(d);
    return n;
}

/* ---------------------------------------------------------------- ranks */

/* One rank: a child process running `steps`, space-separated:
 *   a       allgather (its rank, 4 bytes), deadline CALL_S; checks every rank's part
 *   r<S>    hidet_nccl_bootstrap_recover with a deadline of S seconds (the decider waits S/2)
 *   w       waits for a byte from the test on its pipe
 *   s<MS>   sleeps MS ms
 *   n<MS>   asks hidet_nccl_bootstrap_news every 5 ms until it says a round began, at most MS ms
 *   k       kills itself (SIGKILL)
 * then destroys the bootstrap. Each call writes one line to <base>/out.<label>.<rank>:
 *   allgather <status> <seconds> <message>
 *   news <status> <recovering> <seconds>
 *   recover <status> <seconds> <n_kept> <rank> <size> <local rank> <local size> <kept flags> <message>
 * stderr (the library's warnings) goes to <base>/out.<label>.<rank>.err. */
#define CALL_S 30.0
typedef struct {
    pid_t pid;
    int go; /* the test's end of the rank's pipe */
} rank_t;

static void out_path(const char *label, int rank, const char *ext, char *out, size_t n) {
    snprintf(out, n, "%s/out.%s.%d%s", g_base, label, rank, ext);
}

static void run_steps(const char *dir, const char *key, const char *secret, int rank, int n, const char *steps,
                      int go, FILE *out) {
    if (secret) setenv("HIDET_NCCL_JOB_SECRET", secret, 1);
    else unsetenv("HIDET_NCCL_JOB_SECRET");
    hidet_nccl_settings_reload();
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = key;
    p.rank = rank;
    p.nranks = n;
    p.local_rank = rank;
    p.local_size = n;
    hidet_nccl_bootstrap_h bs;
    if (hidet_nccl_bootstrap_file(&p, &bs) != HIDET_NCCL_SUCCESS) {
        fprintf(out, "init %s\n", hidet_nccl_last_error());
        return;
    }
    for (const char *at = steps; *at;) {
        char op = *at++;
        long arg = strtol(at, (char **)&at, 10);
        while (*at == ' ') at++;
        double t0 = now_s();
        if (op == 'a') {
            int me, size;
            hidet_nccl_bootstrap_rank(bs, &me, &size);
            int mine = 1000 + me, all[64];
            hidet_nccl_status_t st = hidet_nccl_bootstrap_allgather(bs, &mine, all, sizeof mine, CALL_S);
            for (int r = 0; st == HIDET_NCCL_SUCCESS && r < size; r++)
                if (all[r] != 1000 + r) st = HIDET_NCCL_ERROR_INVALID_USAGE; /* 10: a wrong part */
            fprintf(out, "allgather %d %.3f %s\n", st, now_s() - t0, st ? hidet_nccl_last_error() : "");
        } else if (op == 'r') {
            int kept[64] = {0}, n_kept = -1, me = -1, size = -1, lr = -1, ls = -1, old = 0;
            hidet_nccl_bootstrap_rank(bs, &me, &old);
            hidet_nccl_status_t st = hidet_nccl_bootstrap_recover(bs, (double)arg, kept, &n_kept);
            double took = now_s() - t0;
            char msg[4096]; /* before the next call clears it */
            snprintf(msg, sizeof msg, "%s", st ? hidet_nccl_last_error() : "");
            hidet_nccl_bootstrap_rank(bs, &me, &size);
            hidet_nccl_bootstrap_local_rank(bs, &lr, &ls);
            char flags[80] = "";
            for (int r = 0; r < old && r < 64; r++) flags[r] = kept[r] ? '1' : '0';
            fprintf(out, "recover %d %.3f %d %d %d %d %d %s %s\n", st, took, n_kept, me, size, lr, ls,
                    flags[0] ? flags : "-", msg);
        } else if (op == 'w') {
            struct pollfd pfd = {go, POLLIN, 0};
            char c;
            if (poll(&pfd, 1, 60000) != 1 || read(go, &c, 1) != 1) fprintf(out, "wait timed out\n");
        } else if (op == 's') {
            usleep((useconds_t)arg * 1000);
        } else if (op == 'n') {
            int heard = 0;
            hidet_nccl_status_t st;
            while ((st = hidet_nccl_bootstrap_news(bs, &heard)) == HIDET_NCCL_SUCCESS && !heard &&
                   now_s() - t0 < arg / 1000.0)
                usleep(5000);
            fprintf(out, "news %d %d %.3f\n", st, heard, now_s() - t0);
        } else if (op == 'k') {
            fflush(out);
            kill(getpid(), SIGKILL);
        }
        fflush(out);
    }
    hidet_nccl_bootstrap_destroy(bs);
}

/* Starts rank `rank` of n of job `key` (label: its output files) running steps. */
static rank_t start(const char *dir, const char *key, const char *label, const char *secret, int rank, int n,
                    const char *steps) {
    int fds[2];
    rank_t r = {-1, -1};
    if (pipe(fds) != 0) return r;
    char path[PATH_MAX + 64], err[PATH_MAX + 64];
    out_path(label, rank, "", path, sizeof path);
    out_path(label, rank, ".err", err, sizeof err);
    fflush(stdout);
    r.pid = fork();
    if (r.pid == 0) {
        close(fds[1]);
        int fd = open(err, O_CREAT | O_WRONLY | O_TRUNC, 0600);
        if (fd >= 0) dup2(fd, 2);
        FILE *out = fopen(path, "w");
        if (out != NULL) run_steps(dir, key, secret, rank, n, steps, fds[0], out);
        if (out != NULL) fclose(out);
        _exit(0);
    }
    close(fds[0]);
    r.go = fds[1];
    return r;
}

static void go(rank_t *r) {
    if (write(r->go, "g", 1) != 1) CU_FAIL("could not tell a rank to go on");
}

/* Waits (at most 60 s, then kills) for the rank to end. */
static void finish(rank_t *r) {
    for (int i = 0; i < 6000; i++) {
        if (waitpid(r->pid, NULL, WNOHANG) == r->pid) {
            close(r->go);
            return;
        }
        usleep(10000);
    }
    CU_FAIL("a rank did not end within 60 s: killed");
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    close(r->go);
}

/* Kills the rank and reaps it at once (a process of this host that is gone). */
static void kill_rank(rank_t *r) {
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    close(r->go);
}

/* Line `nth` (from 0) of the rank's output that starts with `what` ("" if none). */
static void line_of(const char *label, int rank, const char *what, int nth, char *out, size_t n) {
    char path[PATH_MAX + 64], line[8192];
    out_path(label, rank, "", path, sizeof path);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    while (fgets(line, sizeof line, f) != NULL)
        if (strncmp(line, what, strlen(what)) == 0 && nth-- == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(out, n, "%s", line);
            break;
        }
    fclose(f);
}

/* A recover line's fields. */
typedef struct {
    int st, n_kept, rank, size, local_rank, local_size;
    double took;
    char kept[80], msg[4096];
} recovered_t;

static int recovered(const char *label, int rank, int nth, recovered_t *r) {
    char line[8192];
    line_of(label, rank, "recover ", nth, line, sizeof line);
    memset(r, 0, sizeof *r);
    r->st = -1;
    int used = 0;
    if (sscanf(line, "recover %d %lf %d %d %d %d %d %79s %n", &r->st, &r->took, &r->n_kept, &r->rank, &r->size,
               &r->local_rank, &r->local_size, r->kept, &used) < 8)
        return printf("\n    rank %d of %s: no recover line (%s)", rank, label, line), 0;
    snprintf(r->msg, sizeof r->msg, "%s", line + used);
    return 1;
}

static int allgathered(const char *label, int rank, int nth, double *took, char *msg, size_t n) {
    char line[8192];
    int st = -1, used = 0;
    line_of(label, rank, "allgather ", nth, line, sizeof line);
    if (sscanf(line, "allgather %d %lf %n", &st, took, &used) < 2) return -1;
    if (msg) snprintf(msg, n, "%s", line + used);
    return st;
}

/* 1 once path exists (within wait_s). */
static int wait_for(const char *path, double wait_s) {
    for (double t0 = now_s(); now_s() - t0 < wait_s; usleep(2000))
        if (access(path, F_OK) == 0) return 1;
    return 0;
}

static void err_of(const char *label, int rank, char *out, size_t n) {
    char path[PATH_MAX + 64];
    out_path(label, rank, ".err", path, sizeof path);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = '\0';
    fclose(f);
}

/* The name of a recovery file of generation 0: join.<rank> (rank >= 0) or the decision. */
static void recovery_path(const char *dir, const char *key, uint64_t epoch, int rank, char *out, size_t n) {
    unsigned long long seq = (unsigned long long)(epoch << 48);
    if (rank < 0) snprintf(out, n, "%s/hidet-nccl.%s.%llu.decision", dir, key, seq);
    else snprintf(out, n, "%s/hidet-nccl.%s.%llu.join.%d", dir, key, seq, rank);
}

static void put_file(const char *path, const uint8_t *data, size_t len) {
    unlink(path);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

/* A decision of generation 0, round `epoch`, over world ranks, keeping those with kept[r], as
 * decider `decider`; with secret (NULL: none) its MAC. */
static size_t make_decision(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint64_t name_epoch,
                            uint32_t world, uint32_t decider, const char *kept, const char *secret) {
    hidet_nccl__bf_member_t m[16];
    memset(m, 0, sizeof m);
    for (uint32_t r = 0; r < world; r++) {
        m[r].kept = kept[r] == '1';
        memset(m[r].nonce, 0x40 + (int)r, HN_BF_NONCE);
        m[r].pid = 1;
        snprintf(m[r].host, sizeof m[r].host, "elsewhere");
    }
    size_t len = hidet_nccl__bf_encode_decision(out, cap, key, name_epoch << 48, world, decider, epoch, m, secret != NULL);
    if (len > 0 && secret != NULL) {
        size_t covers;
        uint8_t *mac = hidet_nccl__bf_mac_at(out, len, &covers);
        char why[256];
        CU_ASSERT_FATAL(hidet_nccl__mac((const uint8_t *)secret, strlen(secret), out, covers, mac, why, sizeof why) == 0);
        hidet_nccl__bf_reseal(out, len);
    }
    return len;
}

/* ---------------------------------------------------------------- cases */

/* Two ranks recover, the third lives but never joins within wait_s: rank 0 decides {0, 1} after
 * wait_s; the third, joining later, is told it was left out and which ranks went on; the two go
 * on as a job of two. (a) the late one comes while the others still run (rank 0 tidies at its
 * end, seeing the late one's mark), (b) after they ended (the late one tidies: their processes
 * are gone). Nothing is left either way. */
static void left_out(int late_after_end) {
    char dir[PATH_MAX], key[32];
    new_dir(dir, sizeof dir);
    snprintf(key, sizeof key, "late%d", late_after_end);
    rank_t r0 = start(dir, key, key, NULL, 0, 3, "a r2 w a");
    rank_t r1 = start(dir, key, key, NULL, 1, 3, "a r2 w a");
    rank_t r2 = start(dir, key, key, NULL, 2, 3, "a w r10");
    recovered_t a, b, c;
    if (late_after_end) {
        go(&r0);
        go(&r1);
        finish(&r0);
        finish(&r1);
        go(&r2);
        finish(&r2);
    } else {
        char path[PATH_MAX + 64];
        recovery_path(dir, key, 1, -1, path, sizeof path);
        CU_ASSERT(wait_for(path, 20)); /* decided */
        usleep(100 * 1000);
        go(&r2);
        finish(&r2);
        go(&r0);
        go(&r1);
        finish(&r0);
        finish(&r1);
    }
    CU_ASSERT_FATAL(recovered(key, 0, 0, &a) && recovered(key, 1, 0, &b) && recovered(key, 2, 0, &c));
    printf("\n    ranks 0, 1: %d, %d (%.2f s, %.2f s; wait_s 1 s); rank 2: %d (%.3f s): %.300s", a.st, b.st, a.took,
           b.took, c.st, c.took, c.msg);
    CU_ASSERT(a.st == 0 && b.st == 0 && a.n_kept == 2 && b.n_kept == 2);
    CU_ASSERT(strcmp(a.kept, "110") == 0 && strcmp(b.kept, "110") == 0);
    CU_ASSERT(a.rank == 0 && a.size == 2 && b.rank == 1 && b.size == 2 && b.local_rank == 1 && b.local_size == 2);
    CU_ASSERT(a.took >= 0.9 && a.took < 5); /* it waited wait_s (1 s) for rank 2, not the deadline */
    CU_ASSERT_EQUAL(c.st, HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.msg, "left out"));
    CU_ASSERT_PTR_NOT_NULL(strstr(c.msg, "ranks 0, 1 go on"));
    CU_ASSERT(c.took < 1.0); /* told at once */
    double took;
    CU_ASSERT_EQUAL(allgathered(key, 0, 1, &took, NULL, 0), 0); /* a job of two now */
    CU_ASSERT_EQUAL(allgathered(key, 1, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}
static void test_left_out_while_running(void) { left_out(0); }
static void test_left_out_after_end(void) { left_out(1); }

/* Decisions that are not this round's are never taken: at this round's name, one that says
 * another round, one of another world, one under another job's secret: every rank fails at
 * once, naming the file and why (no decision can be put over it); at the next round's name, a
 * decision of another job (same key, another secret) does not make this round's decider think
 * the job went on without it; a decision of another key is not even looked at. */
static void test_foreign_decisions(void) {
    static const struct {
        const char *name, *secret_of_file, *expect;
        uint64_t epoch;
        uint32_t world;
    } bad[] = {
        {"another round", NULL, "recovery round 2 (expected 1)", 2, 2},
        {"another world", NULL, "bytes, not between", 1, 3}, /* a decision of 3 members is too long for 2 */
        {"another job's secret", "secret-of-another-job-0123", "another job's", 1, 2},
        {"no MAC (a job without the secret)", NULL, "carries no MAC", 1, 2},
    };
    uint8_t file[4096];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char dir[PATH_MAX], key[32], path[PATH_MAX + 64];
        new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "foreign%zu", i);
        const char *secret = i == 3 ? "secret-of-this-job-0123456" : i == 2 ? "secret-of-this-job-0123456" : NULL;
        size_t len = make_decision(file, sizeof file, key, bad[i].epoch, 1, bad[i].world, 0, "111", bad[i].secret_of_file);
        recovery_path(dir, key, 1, -1, path, sizeof path);
        put_file(path, file, len);
        rank_t r0 = start(dir, key, key, secret, 0, 2, "a r20");
        rank_t r1 = start(dir, key, key, secret, 1, 2, "a r20");
        finish(&r0);
        finish(&r1);
        recovered_t a, b;
        CU_ASSERT_FATAL(recovered(key, 0, 0, &a) && recovered(key, 1, 0, &b));
        printf("\n    %s: %d (%.3f s): %.400s", bad[i].name, a.st, a.took, a.msg);
        CU_ASSERT(a.st == HIDET_NCCL_ERROR_BOOTSTRAP && b.st == HIDET_NCCL_ERROR_BOOTSTRAP);
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg, bad[i].expect));
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg, "refused"));
        CU_ASSERT(a.took < 2 && b.took < 2);
        unlink(path);
        CU_ASSERT_EQUAL(count_files(dir, ""), 0);
    }
    /* Beside this round's: the next round's decision of another job with this key, and this
     * round's decision of another key. */
    char dir[PATH_MAX], path[PATH_MAX + 64], other[PATH_MAX + 64];
    new_dir(dir, sizeof dir);
    const char *secret = "secret-of-this-job-0123456";
    size_t len = make_decision(file, sizeof file, "fine", 2, 2, 2, 0, "11", "secret-of-another-job-0123");
    recovery_path(dir, "fine", 2, -1, path, sizeof path);
    put_file(path, file, len);
    len = make_decision(file, sizeof file, "fine.x", 1, 1, 2, 0, "10", secret);
    recovery_path(dir, "fine.x", 1, -1, other, sizeof other);
    put_file(other, file, len);
    rank_t r0 = start(dir, "fine", "fine", secret, 0, 2, "a r20 a");
    rank_t r1 = start(dir, "fine", "fine", secret, 1, 2, "a r20 a");
    finish(&r0);
    finish(&r1);
    recovered_t a, b;
    CU_ASSERT_FATAL(recovered("fine", 0, 0, &a) && recovered("fine", 1, 0, &b));
    printf("\n    beside others' decisions: %d, %d (%.3f s) %.200s", a.st, b.st, a.took, a.msg);
    CU_ASSERT(a.st == 0 && b.st == 0 && strcmp(a.kept, "11") == 0 && strcmp(b.kept, "11") == 0);
    double took;
    CU_ASSERT_EQUAL(allgathered("fine", 1, 1, &took, NULL, 0), 0);
    /* what is not this job's stays (the next round's is another job's: a sweep removes only
     * earlier rounds) */
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(access(other, F_OK), 0);
    unlink(path);
    unlink(other);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* A corrupt join, and one of another job (its MAC), at the place of a rank that died: refused,
 * with a warning that names the file and why, and the round goes on without that rank at once
 * (it is known dead); at the place of a rank that joins: replaced by its own. */
static void test_corrupt_and_foreign_joins(void) {
    const char *secret = "secret-of-this-job-0123456";
    for (int foreign = 0; foreign < 2; foreign++) {
        char dir[PATH_MAX], key[32], path[PATH_MAX + 64], err[8192];
        new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "badjoin%d", foreign);
        rank_t r0 = start(dir, key, key, secret, 0, 3, "a w r20 a");
        rank_t r1 = start(dir, key, key, secret, 1, 3, "a w r20 a");
        rank_t r2 = start(dir, key, key, secret, 2, 3, "a w");
        go(&r2);
        finish(&r2); /* rank 2 ends (gone), after the allgather that showed its process */
        uint8_t file[1024], nonce[HN_BF_NONCE];
        memset(nonce, 7, sizeof nonce);
        size_t len = hidet_nccl__bf_encode_join(file, sizeof file, key, 1ull << 48, 3, 2, nonce, 1, 12345, "elsewhere",
                                                foreign);
        if (foreign) {
            size_t covers;
            char why[256];
            uint8_t *mac = hidet_nccl__bf_mac_at(file, len, &covers);
            const char *other = "secret-of-another-job-0123";
            hidet_nccl__mac((const uint8_t *)other, strlen(other), file, covers, mac, why, sizeof why);
            hidet_nccl__bf_reseal(file, len);
        } else {
            file[HN_BF_HEADER + 3] ^= 0xff; /* its checksum no longer holds */
        }
        recovery_path(dir, key, 1, 2, path, sizeof path);
        put_file(path, file, len);
        /* and a corrupt join at rank 1's place: rank 1 replaces it with its own */
        char mine[PATH_MAX + 64];
        recovery_path(dir, key, 1, 1, mine, sizeof mine);
        put_file(mine, (const uint8_t *)"garbage", 7);
        go(&r0);
        go(&r1);
        finish(&r0);
        finish(&r1);
        recovered_t a, b;
        CU_ASSERT_FATAL(recovered(key, 0, 0, &a) && recovered(key, 1, 0, &b));
        err_of(key, 0, err, sizeof err);
        printf("\n    %s join of a dead rank: %d, %d (%.3f s); rank 0 warned: %.300s", foreign ? "a foreign" : "a corrupt",
               a.st, b.st, a.took, err);
        CU_ASSERT(a.st == 0 && b.st == 0 && strcmp(a.kept, "110") == 0 && strcmp(b.kept, "110") == 0);
        CU_ASSERT(a.took < 2); /* not wait_s (10 s): rank 2 is known gone */
        CU_ASSERT_PTR_NOT_NULL(strstr(err, ".join.2"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, foreign ? "does not match this job's secret" : "checksum"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused"));
        double took;
        CU_ASSERT_EQUAL(allgathered(key, 0, 1, &took, NULL, 0), 0);
        CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* rank 0's end removed the round's names, the refused one too */
    }
}

/* The decider dies before it decides: rank 0 joins and waits (as decider) for rank 2, which
 * lives but has not joined; rank 0 is killed; rank 1 takes over and decides {1, 2} as soon as
 * rank 2 joins, long before wait_s (20 s). */
static void test_decider_dies(void) {
    char dir[PATH_MAX], p0[PATH_MAX + 64], p1[PATH_MAX + 64];
    new_dir(dir, sizeof dir);
    rank_t r0 = start(dir, "takeover", "takeover", NULL, 0, 3, "a r40");
    rank_t r1 = start(dir, "takeover", "takeover", NULL, 1, 3, "a r40 a");
    rank_t r2 = start(dir, "takeover", "takeover", NULL, 2, 3, "a w r40 a");
    recovery_path(dir, "takeover", 1, 0, p0, sizeof p0);
    recovery_path(dir, "takeover", 1, 1, p1, sizeof p1);
    CU_ASSERT_FATAL(wait_for(p0, 20) && wait_for(p1, 20));
    usleep(50 * 1000);
    kill_rank(&r0);
    double t0 = now_s();
    go(&r2);
    finish(&r1);
    finish(&r2);
    double took = now_s() - t0;
    recovered_t b, c;
    CU_ASSERT_FATAL(recovered("takeover", 1, 0, &b) && recovered("takeover", 2, 0, &c));
    printf("\n    rank 0 killed before deciding: ranks 1, 2: %d, %d (kept %s), %.2f s after rank 2 was let go", b.st,
           c.st, b.kept, took);
    CU_ASSERT(b.st == 0 && c.st == 0 && strcmp(b.kept, "011") == 0 && strcmp(c.kept, "011") == 0);
    CU_ASSERT(b.rank == 0 && b.size == 2 && c.rank == 1 && c.size == 2);
    CU_ASSERT(took < 5);
    double t;
    CU_ASSERT_EQUAL(allgathered("takeover", 1, 1, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(allgathered("takeover", 2, 1, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* the dead decider's join went with the sweep */
}

/* A wait on a peer that left fails at once (the deadline is 30 s), naming it: the root waiting for
 * a reader that died; a reader waiting for a root that died; a reader waiting for a root that went
 * to recover (its join of the next round is there). */
static void test_dead_peer_fails_fast(void) {
    static const struct {
        const char *key, *what;
        int victim, watcher;
        const char *victim_steps, *watcher_steps, *expect;
    } cases[] = {
        {"deadreader", "root waits for a dead reader", 2, 0, "a w k", "a w a", "rank 2 (reader) is dead"},
        {"deadroot", "reader waits for a dead root", 0, 1, "a w k", "a w a", "rank 0 (root) is dead"},
        {"goneroot", "reader waits for a root that recovers", 0, 2, "a w r3", "a w a", "rank 0 (root) gave this round up"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char dir[PATH_MAX], msg[8192];
        new_dir(dir, sizeof dir);
        rank_t r[3];
        int third = 3 - cases[i].victim - cases[i].watcher;
        for (int k = 0; k < 3; k++) /* the third rank is in the second allgather too */
            r[k] = start(dir, cases[i].key, cases[i].key, NULL, k, 3,
                         k == cases[i].victim ? cases[i].victim_steps : cases[i].watcher_steps);
        go(&r[cases[i].watcher]);
        go(&r[third]);
        usleep(100 * 1000); /* they wait */
        go(&r[cases[i].victim]);
        if (cases[i].victim_steps[4] == 'k') {
            waitpid(r[cases[i].victim].pid, NULL, 0); /* reaped at once, as a launcher does */
            close(r[cases[i].victim].go);
        }
        finish(&r[cases[i].watcher]);
        kill_rank(&r[third]); /* a reader whose root failed but lives would wait for its deadline */
        if (cases[i].victim_steps[4] != 'k') finish(&r[cases[i].victim]);
        double took = -1;
        int st = allgathered(cases[i].key, cases[i].watcher, 1, &took, msg, sizeof msg);
        printf("\n    %s: %d after %.3f s: %.300s", cases[i].what, st, took, msg);
        CU_ASSERT_EQUAL(st, HIDET_NCCL_ERROR_BOOTSTRAP);
        /* far below the 30 s deadline: 0.1 s before the peer left, then a poll or two (0.6 s seen under ASan) */
        CU_ASSERT(took >= 0 && took < 5.0);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, cases[i].expect));
        /* what the dead left: rounds broken off; a later job with this key in this directory is
         * not troubled by them, and here the test removes them */
        DIR *d = opendir(dir);
        for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
            if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
        if (d != NULL) closedir(d);
    }
}

/* Rank 2 begins a recovery round on its own (its communicator failed where the others' did not
 * see it): ranks 0 and 1 hear it through hidet_nccl_bootstrap_news (what comm_wait asks) within
 * a poll or two, with no bootstrap call of their own, and join; nobody is lost. No news before. */
static void test_news(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    rank_t r[3] = {start(dir, "news", "news", NULL, 0, 3, "a n0 n5000 r10 a"),
                   start(dir, "news", "news", NULL, 1, 3, "a n0 n5000 r10 a"),
                   start(dir, "news", "news", NULL, 2, 3, "a n0 s300 r10 a")};
    for (int i = 0; i < 3; i++) finish(&r[i]);
    for (int i = 0; i < 3; i++) {
        char before[256], heard[256], rec[4096], after[4096];
        line_of("news", i, "news", 0, before, sizeof before);
        line_of("news", i, "news", 1, heard, sizeof heard);
        line_of("news", i, "recover", 0, rec, sizeof rec);
        line_of("news", i, "allgather", 1, after, sizeof after);
        CU_ASSERT(strncmp(before, "news 0 0 ", 9) == 0);
        if (i < 2) {
            double took = -1;
            CU_ASSERT(sscanf(heard, "news 0 1 %lf", &took) == 1 && took < 2.0);
            printf("\n    rank %d heard of rank 2's round after %.3f s", i, took);
        }
        CU_ASSERT(strncmp(rec, "recover 0 ", 10) == 0 && strstr(rec, " 3 ") != NULL && strstr(rec, " 111 ") != NULL);
        CU_ASSERT(strncmp(after, "allgather 0 ", 12) == 0);
    }
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* One rank: recover takes no file and keeps it; a bad epoch is refused with the numbers. */
static void test_alone(void) {
    char dir[PATH_MAX];
    new_dir(dir, sizeof dir);
    rank_t r0 = start(dir, "alone", "alone", NULL, 0, 1, "a r5 a r5 a");
    finish(&r0);
    recovered_t a, b;
    CU_ASSERT_FATAL(recovered("alone", 0, 0, &a) && recovered("alone", 0, 1, &b));
    CU_ASSERT(a.st == 0 && b.st == 0 && a.n_kept == 1 && b.size == 1);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = "epoch";
    p.rank = 0;
    p.nranks = 2;
    void *state = NULL;
    char msg[1024] = "";
    hidet_nccl_bootstrap_init_args_t args = {sizeof args, 5.0, -1, -1, -1, -1, "test"};
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file_v3.init(&p, &args, &state, msg, sizeof msg), HIDET_NCCL_SUCCESS, NULL);
    unsigned char kept[2];
    CU_ASSERT_EQUAL(hidet_nccl_bootstrap_file_v3.recover(state, 3, 1.0, 2.0, kept, msg, sizeof msg),
                    HIDET_NCCL_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "recovery round 3 asked of a bootstrap whose next round is 1"));
    hidet_nccl_bootstrap_file_v3.finalize(state, msg, sizeof msg);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

int main(void) {
    const char *t = getenv("TEST_TMPDIR");
    snprintf(g_base, sizeof g_base, "%s/file_recover.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(g_base) == NULL) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    static const hn_test_t tests[] = {
        {"a rank that never joins is left out after wait_s, told when it comes (others running)",
         test_left_out_while_running},
        {"... and when it comes after the others ended", test_left_out_after_end},
        {"decisions of another round or job are never taken", test_foreign_decisions},
        {"corrupt and foreign joins refused with a message", test_corrupt_and_foreign_joins},
        {"a decider that dies before deciding is taken over", test_decider_dies},
        {"a wait on a peer that left fails at once", test_dead_peer_fails_fast},
        {"news of a round: the others hear it and join", test_news},
        {"one rank; a bad epoch", test_alone},
        {NULL, NULL},
    };
    return hn_run_tests("file_recover", tests);
}
