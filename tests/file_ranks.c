/* Ranks of the shared-file bootstrap as real processes, for its recovery tests (tests/file_ranks.h):
 * each forked from the test, running its script of calls, writing a line per call. */
#include <dirent.h>
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
#include "tests/file_ranks.h"

static char g_base[PATH_MAX];
static int g_case;
static uid_t g_uid; /* the ranks' user (0: the test's) */
static gid_t g_gid;

int hn_fr_begin(const char *name) {
    const char *t = getenv("TEST_TMPDIR");
    snprintf(g_base, sizeof g_base, "%s/%s.XXXXXX", t ? t : "/tmp", name);
    return mkdtemp(g_base) == NULL ? -1 : 0;
}

double hn_fr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void hn_fr_new_dir(char *out, size_t n) {
    snprintf(out, n, "%s/case%d", g_base, ++g_case);
    mkdir(out, 0700);
}

int hn_fr_count_files(const char *dir, const char *part) {
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

#define CALL_S 30.0 /* an allgather's deadline (step a) */

static void out_path(const char *label, int rank, const char *ext, char *out, size_t n) {
    snprintf(out, n, "%s/out.%s.%d%s", g_base, label, rank, ext);
}

/* A rank's process: runs steps (tests/file_ranks.h), a line per call on out; go: its end of the
 * test's pipe. */
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
    int joining = -1;
    hidet_nccl_bootstrap_joining(bs, &joining);
    fprintf(out, "joining %d\n", joining);
    fflush(out);
    for (const char *at = steps; *at;) {
        char op = *at++;
        long arg = strtol(at, (char **)&at, 10);
        while (*at == ' ') at++;
        double t0 = hn_fr_now();
        if (op == 'a') {
            int me, size;
            hidet_nccl_bootstrap_rank(bs, &me, &size);
            int mine = 1000 + me, all[64];
            double deadline = arg > 0 ? (double)arg : CALL_S;
            hidet_nccl_status_t st = hidet_nccl_bootstrap_allgather(bs, &mine, all, sizeof mine, deadline);
            for (int r = 0; st == HIDET_NCCL_SUCCESS && r < size; r++)
                if (all[r] != 1000 + r) st = HIDET_NCCL_ERROR_INVALID_USAGE; /* 10: a wrong part */
            fprintf(out, "allgather %d %.3f %s\n", st, hn_fr_now() - t0, st ? hidet_nccl_last_error() : "");
        } else if (op == 'r') {
            int kept[64] = {0}, n_kept = -1, me = -1, size = -1, lr = -1, ls = -1, old = 0;
            hidet_nccl_bootstrap_rank(bs, &me, &old);
            hidet_nccl_status_t st = hidet_nccl_bootstrap_recover(bs, (double)arg, kept, &n_kept);
            double took = hn_fr_now() - t0;
            char msg[4096]; /* before the next call clears it */
            snprintf(msg, sizeof msg, "%s", st ? hidet_nccl_last_error() : "");
            hidet_nccl_bootstrap_rank(bs, &me, &size);
            hidet_nccl_bootstrap_local_rank(bs, &lr, &ls);
            char flags[80] = "";
            for (int r = 0; r < old && r < 64; r++) flags[r] = kept[r] ? '1' : '0';
            fprintf(out, "recover %d %.3f %d %d %d %d %d %s %s\n", st, took, n_kept, me, size, lr, ls,
                    flags[0] ? flags : "-", msg);
        } else if (op == 'h') {
            int members[64] = {0}, joined[64] = {0}, n_members = -1, n_joined = -1, me = -1, size = -1;
            hidet_nccl_status_t st = hidet_nccl_bootstrap_heal(bs, (double)arg, members, joined, &n_members, &n_joined);
            double took = hn_fr_now() - t0;
            char msg[4096], m[80] = "", j[80] = "";
            snprintf(msg, sizeof msg, "%s", st ? hidet_nccl_last_error() : "");
            hidet_nccl_bootstrap_rank(bs, &me, &size);
            for (int r = 0; r < n && r < 64; r++) {
                m[r] = members[r] ? '1' : '0';
                j[r] = joined[r] ? '1' : '0';
            }
            fprintf(out, "heal %d %.3f %d %d %d %d %s %s %.6f %s\n", st, took, n_members, n_joined, me, size, m, j,
                    hn_fr_now(), msg);
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
                   hn_fr_now() - t0 < arg / 1000.0)
                usleep(5000);
            fprintf(out, "news %d %d %.3f\n", st, heard, hn_fr_now() - t0);
        } else if (op == 'k') {
            fflush(out);
            kill(getpid(), SIGKILL);
        }
        fflush(out);
    }
    hidet_nccl_status_t st = hidet_nccl_bootstrap_destroy(bs);
    fprintf(out, "destroy %d %s\n", st, st ? hidet_nccl_last_error() : "");
}

hn_fr_rank_t hn_fr_start(const char *dir, const char *key, const char *label, const char *secret, int rank, int n,
                         const char *steps) {
    int fds[2];
    hn_fr_rank_t r = {-1, -1};
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
        if (g_uid != 0 && (setgid(g_gid) != 0 || setuid(g_uid) != 0)) _exit(1);
        if (out != NULL) run_steps(dir, key, secret, rank, n, steps, fds[0], out);
        if (out != NULL) fclose(out);
        _exit(0);
    }
    close(fds[0]);
    r.go = fds[1];
    return r;
}

int hn_fr_run_as(uid_t uid, gid_t gid) {
    if (uid != 0 && geteuid() != 0) return printf("\n    (not root: ranks cannot run as uid %u)", (unsigned)uid), -1;
    g_uid = uid;
    g_gid = gid;
    return 0;
}

void hn_fr_go(hn_fr_rank_t *r) {
    if (write(r->go, "g", 1) != 1) CU_FAIL("could not tell a rank to go on");
}

void hn_fr_finish(hn_fr_rank_t *r) {
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

void hn_fr_kill(hn_fr_rank_t *r) {
    kill(r->pid, SIGKILL);
    waitpid(r->pid, NULL, 0);
    close(r->go);
}

void hn_fr_line_of(const char *label, int rank, const char *what, int nth, char *out, size_t n) {
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

int hn_fr_recovered(const char *label, int rank, int nth, hn_fr_recovered_t *r) {
    char line[8192];
    hn_fr_line_of(label, rank, "recover ", nth, line, sizeof line);
    memset(r, 0, sizeof *r);
    r->st = -1;
    int used = 0;
    if (sscanf(line, "recover %d %lf %d %d %d %d %d %79s %n", &r->st, &r->took, &r->n_kept, &r->rank, &r->size,
               &r->local_rank, &r->local_size, r->kept, &used) < 8)
        return printf("\n    rank %d of %s: no recover line (%s)", rank, label, line), 0;
    snprintf(r->msg, sizeof r->msg, "%s", line + used);
    return 1;
}

int hn_fr_healed(const char *label, int rank, int nth, hn_fr_healed_t *h) {
    char line[8192];
    hn_fr_line_of(label, rank, "heal ", nth, line, sizeof line);
    memset(h, 0, sizeof *h);
    h->st = -1;
    int used = 0;
    if (sscanf(line, "heal %d %lf %d %d %d %d %79s %79s %lf %n", &h->st, &h->took, &h->n_members, &h->n_joined,
               &h->rank, &h->size, h->members, h->joined, &h->at, &used) < 9)
        return printf("\n    rank %d of %s: no heal line (%s)", rank, label, line), 0;
    snprintf(h->msg, sizeof h->msg, "%s", line + used);
    return 1;
}

int hn_fr_joining(const char *label, int rank) {
    char line[256];
    int j = -1;
    hn_fr_line_of(label, rank, "joining ", 0, line, sizeof line);
    return sscanf(line, "joining %d", &j) == 1 ? j : -1;
}

int hn_fr_allgathered(const char *label, int rank, int nth, double *took, char *msg, size_t n) {
    char line[8192];
    int st = -1, used = 0;
    hn_fr_line_of(label, rank, "allgather ", nth, line, sizeof line);
    if (sscanf(line, "allgather %d %lf %n", &st, took, &used) < 2) return -1;
    if (msg) snprintf(msg, n, "%s", line + used);
    return st;
}

int hn_fr_wait_for(const char *path, double wait_s) {
    for (double t0 = hn_fr_now(); hn_fr_now() - t0 < wait_s; usleep(2000))
        if (access(path, F_OK) == 0) return 1;
    return 0;
}

void hn_fr_err_of(const char *label, int rank, char *out, size_t n) {
    char path[PATH_MAX + 64];
    out_path(label, rank, ".err", path, sizeof path);
    out[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) return;
    size_t got = fread(out, 1, n - 1, f);
    out[got] = '\0';
    fclose(f);
}

void hn_fr_recovery_path(const char *dir, const char *key, uint64_t epoch, int rank, char *out, size_t n) {
    unsigned long long seq = (unsigned long long)(epoch << 48);
    if (rank < 0) snprintf(out, n, "%s/hidet-nccl.%s.%llu.decision", dir, key, seq);
    else snprintf(out, n, "%s/hidet-nccl.%s.%llu.join.%d", dir, key, seq, rank);
}

void hn_fr_put_file(const char *path, const uint8_t *data, size_t len) {
    unlink(path);
    int fd = open(path, O_CREAT | O_WRONLY | O_EXCL, 0600);
    CU_ASSERT_FATAL(fd >= 0);
    CU_ASSERT_FATAL(write(fd, data, len) == (ssize_t)len);
    close(fd);
}

/* The MAC of secret (NULL: none) into a file of len bytes encoded with room for it. */
static size_t sealed(uint8_t *out, size_t len, const char *secret) {
    if (len > 0 && secret != NULL) {
        size_t covers;
        uint8_t *mac = hidet_nccl__bf_mac_at(out, len, &covers);
        char why[256];
        CU_ASSERT_FATAL(hidet_nccl__mac((const uint8_t *)secret, strlen(secret), out, covers, mac, why, sizeof why) == 0);
        hidet_nccl__bf_reseal(out, len);
    }
    return len;
}

size_t hn_fr_make_decision_of(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint64_t name_epoch,
                              uint32_t world, uint32_t decider, const char *kept, const char *secret,
                              const uint32_t *pids, const char *host) {
    hidet_nccl__bf_member_t m[16];
    memset(m, 0, sizeof m);
    for (uint32_t r = 0; r < world && r < 16; r++) {
        m[r].kept = kept[r] == '1';
        memset(m[r].nonce, 0x40 + (int)r, HN_BF_NONCE);
        m[r].pid = pids[r];
        snprintf(m[r].host, sizeof m[r].host, "%s", host);
    }
    return sealed(out, hidet_nccl__bf_encode_decision(out, cap, key, name_epoch << 48, world, decider, epoch, m,
                                                      secret != NULL), secret);
}

size_t hn_fr_make_decision(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint64_t name_epoch,
                           uint32_t world, uint32_t decider, const char *kept, const char *secret) {
    const uint32_t ones[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    return hn_fr_make_decision_of(out, cap, key, epoch, name_epoch, world, decider, kept, secret, ones, "elsewhere");
}

size_t hn_fr_make_join(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint32_t world, uint32_t rank,
                       uint32_t pid, const char *host, const char *secret) {
    uint8_t nonce[HN_BF_NONCE];
    memset(nonce, 0x60 + (int)rank, sizeof nonce);
    return sealed(out, hidet_nccl__bf_encode_join(out, cap, key, epoch << 48, world, rank, nonce, epoch, pid, host,
                                                  secret != NULL), secret);
}

uint32_t hn_fr_dead_pid(void) {
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    return (uint32_t)child;
}
