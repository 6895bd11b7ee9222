/* The shared-file bootstrap, on the CPU, with real ncclGetUniqueId bytes in many processes
 * (fork/exec of file_bootstrap_peer). Numbers refer to the list of properties. This file:
 * main, the table of every case of the binary (tests/bootstrap_file_test.h lists its files), and
 * properties 1 .. 8 and the parameters. A job that must meet gets a deadline that follows from its
 * ranks, the CPUs and the build: job_deadline(n) = max(60 s, 0.5 s x n / CPUs) x slowdown
 * (tests/deadline.h; 3 under ASan); the deadlines a case expects to pass (a root that never
 * comes) are the case itself, and what it asserts holds on a busy machine too. */
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

#include "tests/bootstrap_file_test.h"
#include "tests/deadline.h"

/* 1 and 8: every process gets exactly the root's bytes; nothing is left behind. The ranks'
 * deadline follows from their number and the machine: job_deadline(n). */
static void check_n(int n) {
    char dir[PATH_MAX], key[32], id[257];
    new_dir(dir, sizeof dir);
    snprintf(key, sizeof key, "job%d", n);
    CU_ASSERT_EQUAL(run_job(dir, key, n, 1, job_deadline(n), 0), 0);
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
    CU_ASSERT_EQUAL(run_job(dir, "samekey", 2, 1, job_deadline(2), 500), 0);
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
        pids[2 * r] = spawn(dir, "jobA", r, 8, 3, job_deadline(16), 0);
        pids[2 * r + 1] = spawn(dir, "jobB", r, 8, 3, job_deadline(16), 0);
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
    CU_ASSERT_EQUAL(run_job(dir, "rounds", 4, 3, job_deadline(4), 0), 0);
    CU_ASSERT(all_same_id("rounds", 4, 0, first));
    CU_ASSERT(all_same_id("rounds", 4, 1, second));
    CU_ASSERT(all_same_id("rounds", 4, 2, third));
    CU_ASSERT_STRING_NOT_EQUAL(first, second);
    CU_ASSERT_STRING_NOT_EQUAL(second, third);
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
        CU_ASSERT(elapsed >= 0.5 && elapsed < 0.5 + hn_test_scaled(1.5)); /* the deadline, and a moment */
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
    CU_ASSERT_EQUAL(run_job(dir, "fixme", 3, 1, job_deadline(3), 300), 0);
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
    CU_ASSERT(elapsed >= 1.0 && elapsed < 1.0 + hn_test_scaled(1.0));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* its hello is gone too */
    /* Many readers at once, each its own process; their root comes once they all gave up (it
     * was started 5 s late for it before: now it is started when they ended). */
    pid_t readers[8];
    for (int r = 7; r >= 1; r--) readers[r] = spawn(dir, "noroot8", r, 8, 1, 1.0, 0);
    int failed = 0;
    for (int r = 1; r < 8; r++) failed += !exited_ok(readers[r]);
    failed += !exited_ok(spawn(dir, "noroot8", 0, 8, 1, 1.0, 0));
    CU_ASSERT_EQUAL(failed >= 7, 1);
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
     * to go, within the one deadline of the round (not twice it): 0.5 s, scaled. */
    root_job_t job = {dir, "lonely2", hn_test_scaled(0.5), 0, "", 0, 2};
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello(dir, "lonely2", 7, 5.0), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_TIMEOUT);
    char waited[64];
    snprintf(waited, sizeof waited, "did not take it (waited %.1f s)", job.timeout);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, waited));
    CU_ASSERT(job.took >= job.timeout && job.took < 1.8 * job.timeout);
    char path[PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/hidet-nccl.lonely2.0.hello.1", dir);
    unlink(path);
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* the announce and the claim were removed */
}

/* 8: after a crashed root (killed while waiting), the next job works, with a new key and
 * with the same key (stale hellos of the dead job in the way). */
static void test_after_crashed_root(void) {
    char dir[PATH_MAX], id[257];
    new_dir(dir, sizeof dir);
    pid_t root = spawn(dir, "crashy", 0, 3, 1, job_deadline(3), 0);
    pid_t reader = spawn(dir, "crashy", 1, 3, 1, job_deadline(3), 0);
    int both = 0;
    HN_WAIT_FOR(both, count_files(dir, "crashy") >= 2, 10, "the crashy root's claim and a hello");
    CU_ASSERT(both);
    kill(root, SIGKILL);
    kill(reader, SIGKILL); /* its hello stays behind, as after a crash */
    waitpid(root, NULL, 0);
    waitpid(reader, NULL, 0);
    CU_ASSERT(count_files(dir, "crashy") >= 1);
    CU_ASSERT_EQUAL(run_job(dir, "fresh", 3, 1, job_deadline(3), 0), 0);
    CU_ASSERT(all_same_id("fresh", 3, 0, id));
    CU_ASSERT_EQUAL(run_job(dir, "crashy", 3, 1, job_deadline(3), 0), 0);
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
