/* What the shared-file bootstrap's recovery rounds leave in the directory, and what files left
 * there by others do to them (issue 38), with real processes (tests/file_ranks.h): every round's
 * files go in every outcome (all join and end at once, a round that timed out, a rank dead
 * before the first round ended); a decision or joins left by an ended job with the same key are
 * found stale and removed, never taken for this job's (with or without a job secret, this
 * round's or a later one's); a second user's mark at a rank's .leftout name is not trusted; a
 * temporary file of a writer killed mid-write goes with a later job's start; a rank that ends last
 * answers the later rounds that left it out, and removes the roster of a rank 0 that died. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootstrap_file/file_io_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"
#include "tests/file_ranks.h"

#define SECRET "secret-of-this-job-0123456"
#define OTHER_SECRET "secret-of-an-ended-job-0123"

static void this_host(char *out, size_t n) {
    if (gethostname(out, n) != 0) out[0] = '\0';
    out[n - 1] = '\0';
}

/* Item 1: three ranks, an allgather, a recovery round that all join, destroy at once, ten
 * times: every round ends with the directory empty (the decision went with the last reader). */
static void test_all_join_end_at_once(void) {
    int left = 0, bad = 0;
    for (int i = 0; i < 10; i++) {
        char dir[PATH_MAX], key[32];
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "all%d", i);
        hn_fr_rank_t r[3];
        for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, key, key, NULL, k, 3, "a r10");
        for (int k = 0; k < 3; k++) hn_fr_finish(&r[k]);
        for (int k = 0; k < 3; k++) {
            hn_fr_recovered_t x;
            bad += !hn_fr_recovered(key, k, 0, &x) || x.st != 0 || strcmp(x.kept, "111") != 0;
        }
        left += hn_fr_count_files(dir, "") > 0;
    }
    printf("\n    %d of 10 jobs left files", left);
    CU_ASSERT_EQUAL(bad, 0);
    CU_ASSERT_EQUAL(left, 0);
}

/* Item 1: a rank whose round timed out (rank 1, a 1 s deadline) while rank 0 waited for rank 2,
 * alive but never joining; rank 0 decides alone after wait_s; rank 2 ends without recovering.
 * Nothing stays: rank 1's join, rank 0's decision, whatever the order of their ends. */
static void test_round_timed_out(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "timedout", "timedout", NULL, 0, 3, "a r4");
    hn_fr_rank_t r1 = hn_fr_start(dir, "timedout", "timedout", NULL, 1, 3, "a r1");
    hn_fr_rank_t r2 = hn_fr_start(dir, "timedout", "timedout", NULL, 2, 3, "a w");
    hn_fr_finish(&r1);
    hn_fr_finish(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r2);
    hn_fr_recovered_t a, b;
    CU_ASSERT_FATAL(hn_fr_recovered("timedout", 0, 0, &a) && hn_fr_recovered("timedout", 1, 0, &b));
    printf("\n    rank 0: %d (kept %s, %.2f s); rank 1: %d (%.2f s): %.200s", a.st, a.kept, a.took, b.st, b.took, b.msg);
    CU_ASSERT(a.st == 0 && strcmp(a.kept, "100") == 0);
    CU_ASSERT_EQUAL(b.st, HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Item 2: rank 2 dies after it made its bootstrap but before the first round ended (nobody saw
 * its process in a round): the others' allgather fails at its deadline, they recover without it
 * at once (its process is known gone) and nothing stays. */
static void test_dead_before_first_round(void) {
    char dir[PATH_MAX], presence[PATH_MAX + 64];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r2 = hn_fr_start(dir, "early", "early", NULL, 2, 3, "w");
    snprintf(presence, sizeof presence, "%s/hidet-nccl.early.0.join.2", dir);
    CU_ASSERT(hn_fr_wait_for(presence, 20)); /* it made its bootstrap */
    hn_fr_kill(&r2);
    hn_fr_rank_t r[2];
    for (int k = 0; k < 2; k++) r[k] = hn_fr_start(dir, "early", "early", NULL, k, 3, "a2 r10 a");
    for (int k = 0; k < 2; k++) {
        hn_fr_recovered_t x;
        double took;
        hn_fr_finish(&r[k]);
        CU_ASSERT_FATAL(hn_fr_recovered("early", k, 0, &x));
        printf("\n    rank %d: %d (kept %s, %.2f s)", k, x.st, x.kept, x.took);
        CU_ASSERT(x.st == 0 && strcmp(x.kept, "110") == 0);
        CU_ASSERT(x.took < 3); /* not wait_s (5 s): rank 2 is known gone */
        CU_ASSERT_EQUAL(hn_fr_allgathered("early", k, 1, &took, NULL, 0), 0);
    }
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Runs a clean job of three ranks ("a r10 a") with key in dir (secret: the job's, or NULL);
 * every rank must recover with all three kept and allgather after; nothing may stay. Returns
 * rank 0's warnings in err. */
static void clean_job(const char *dir, const char *key, const char *secret, char *err, size_t n) {
    hn_fr_rank_t r[3];
    for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, key, key, secret, k, 3, "a r10 a");
    for (int k = 0; k < 3; k++) hn_fr_finish(&r[k]);
    for (int k = 0; k < 3; k++) {
        hn_fr_recovered_t x;
        double took;
        CU_ASSERT_FATAL(hn_fr_recovered(key, k, 0, &x));
        if (x.st != 0) printf("\n    rank %d: %d (%.2f s): %.400s", k, x.st, x.took, x.msg);
        CU_ASSERT(x.st == 0 && strcmp(x.kept, "111") == 0 && x.size == 3);
        CU_ASSERT_EQUAL(hn_fr_allgathered(key, k, 1, &took, NULL, 0), 0);
    }
    hn_fr_err_of(key, 0, err, n);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Items 1 and 4: a decision left by an ended job with the same key (its three processes gone
 * from this host) at this job's round-1 name, and one of its round 3: without a secret, with one
 * (the ended job's was another). The job's ranks find them stale, say so, remove them and go
 * on all three: never "left out", never a set of one, never "went on to round 3 without it",
 * never "two jobs at once". */
static void test_stale_decisions(void) {
    char host[128];
    this_host(host, sizeof host);
    for (int i = 0; i < 4; i++) {
        int with_secret = i & 1, later = i >> 1;
        char dir[PATH_MAX], key[32], path[PATH_MAX + 64], err[8192];
        uint8_t file[4096];
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "staledec%d", i);
        uint32_t pids[3] = {hn_fr_dead_pid(), hn_fr_dead_pid(), hn_fr_dead_pid()};
        uint64_t epoch = later ? 3 : 1;
        size_t len = hn_fr_make_decision_of(file, sizeof file, key, epoch, epoch, 3, 0, later ? "110" : "101",
                                            with_secret ? OTHER_SECRET : NULL, pids, host);
        hn_fr_recovery_path(dir, key, epoch, -1, path, sizeof path);
        hn_fr_put_file(path, file, len);
        clean_job(dir, key, with_secret ? SECRET : NULL, err, sizeof err);
        printf("\n    an ended job's round-%llu decision, %s: %.300s", (unsigned long long)epoch,
               with_secret ? "another secret" : "no secret", err);
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "stale"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
    }
}

/* Item 4: joins of an ended job (another secret; their processes gone) at every join name of
 * this job's round 1: stale, replaced or removed, said; the job recovers all three. */
static void test_stale_joins(void) {
    char host[128], dir[PATH_MAX], path[PATH_MAX + 64], err[8192];
    this_host(host, sizeof host);
    hn_fr_new_dir(dir, sizeof dir);
    for (int r = 0; r < 3; r++) {
        uint8_t file[1024];
        size_t len = hn_fr_make_join(file, sizeof file, "stalejoin", 1, 3, (uint32_t)r, hn_fr_dead_pid(), host,
                                     OTHER_SECRET);
        hn_fr_recovery_path(dir, "stalejoin", 1, r, path, sizeof path);
        hn_fr_put_file(path, file, len);
    }
    clean_job(dir, "stalejoin", SECRET, err, sizeof err);
    printf("\n    an ended job's joins: %.300s", err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "stale"));
}

/* Item 8: a temporary file of a writer killed mid-write (rank 0 writing its roster) goes with the
 * next clean job of that key. */
static void test_orphaned_temporary(void) {
    char host[128], dir[PATH_MAX], path[PATH_MAX + 200];
    this_host(host, sizeof host);
    hn_fr_new_dir(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/hidet-nccl.orphan.0.decision.tmp.%s.%u.0badc0de", dir, host, hn_fr_dead_pid());
    hn_fr_put_file(path, (const uint8_t *)"half a roster", 13);
    hn_fr_rank_t r[3];
    for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, "orphan", "orphan", NULL, k, 3, "a");
    for (int k = 0; k < 3; k++) hn_fr_finish(&r[k]);
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("orphan", 0, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Item 3: in a shared sticky directory a second user put a file at rank 2's .leftout name before
 * the job. Ranks 0 and 1 recover without rank 2 (alive, not joining) and end; rank 2 joins
 * after: it is told it was left out (her mark did not count as its reading of the decision),
 * never given a set of its own, and the job leaves nothing of its own. Needs root: the ranks
 * run as one user, her file is another's. */
static void test_foreign_leftout_mark(void) {
    if (hn_fr_run_as(4242, 4242) != 0) return;
    char base[] = "/tmp/hidet-nccl-tidy.XXXXXX", dir[PATH_MAX], path[PATH_MAX + 64];
    CU_ASSERT_FATAL(mkdtemp(base) != NULL);
    chmod(base, 0755);
    snprintf(dir, sizeof dir, "%s/shared", base);
    CU_ASSERT_FATAL(mkdir(dir, 0777) == 0 && chmod(dir, 01777) == 0);
    hn_fr_recovery_path(dir, "mark", 1, 2, path, sizeof path);
    strcat(path, ".leftout");
    hn_fr_put_file(path, (const uint8_t *)"hers", 4);
    CU_ASSERT_FATAL(chown(path, 4343, 4343) == 0);
    hn_fr_rank_t r0 = hn_fr_start(dir, "mark", "mark", NULL, 0, 3, "a r2 w");
    hn_fr_rank_t r1 = hn_fr_start(dir, "mark", "mark", NULL, 1, 3, "a r2");
    hn_fr_rank_t r2 = hn_fr_start(dir, "mark", "mark", NULL, 2, 3, "a w r10");
    hn_fr_finish(&r1); /* rank 1 took the decision; rank 0, the new rank 0, ends last */
    hn_fr_go(&r0);
    hn_fr_finish(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r2);
    hn_fr_run_as(0, 0);
    hn_fr_recovered_t a, c;
    CU_ASSERT(hn_fr_recovered("mark", 0, 0, &a) && hn_fr_recovered("mark", 2, 0, &c));
    printf("\n    ranks 0, 1 went on (%d, kept %s); rank 2: %d (kept %s): %.300s", a.st, a.kept, c.st, c.kept, c.msg);
    CU_ASSERT(a.st == 0 && strcmp(a.kept, "110") == 0);
    CU_ASSERT_EQUAL(c.st, HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(c.msg, "left out"));
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 1); /* hers alone */
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    DIR *d = opendir(dir); /* /tmp is no test's own directory: whatever a failure left goes too */
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        if (e->d_name[0] != '.') unlinkat(dirfd(d), e->d_name, 0);
    if (d != NULL) closedir(d);
    rmdir(dir);
    rmdir(base);
}

/* Rounds after the next one that name a rank not kept, which it never came to (it was stopped past
 * its deadline in the round before, which kept it, while the others went on without it): the
 * others end first and their tidying waits for it; it ends last and must answer each such round
 * (its mark), or the decision stays for ever. Here the others' round 2 is made by hand (this
 * job's secret, the ranks' own processes: 0 and 1 kept, 2 not); rank 2 never recovered. */
static void test_later_round_left_out(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], host[256];
    hn_fr_new_dir(dir, sizeof dir);
    this_host(host, sizeof host);
    hn_fr_rank_t r[3];
    for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, "later", "later", SECRET, k, 3, "a w");
    int made = 0;
    double took;
    for (double t0 = hn_fr_now(); made < 3 && hn_fr_now() - t0 < 30; usleep(10000))
        for (int k = made = 0; k < 3; k++) made += hn_fr_allgathered("later", k, 0, &took, NULL, 0) == 0;
    CU_ASSERT_FATAL(made == 3);
    const uint32_t pids[3] = {(uint32_t)r[0].pid, (uint32_t)r[1].pid, (uint32_t)r[2].pid};
    uint8_t file[4096];
    size_t len = hn_fr_make_decision_of(file, sizeof file, "later", 2, 2, 3, 0, "110", SECRET, pids, host);
    CU_ASSERT_FATAL(len > 0);
    hn_fr_recovery_path(dir, "later", 2, -1, path, sizeof path);
    hn_fr_put_file(path, file, len);
    for (int k = 0; k < 2; k++) {
        hn_fr_go(&r[k]);
        hn_fr_finish(&r[k]);
    }
    CU_ASSERT_EQUAL(access(path, F_OK), 0); /* the others' ends leave it: rank 2 may still read it */
    hn_fr_go(&r[2]);
    hn_fr_finish(&r[2]);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Rank 0 (the roster's writer) killed after the job's first allgather; ranks 1 and 2 end without
 * another call, rank 2 last: its end removes what the dead left, the roster among it (rank 0 no
 * longer can), once no process the roster keeps is alive but its own. */
static void test_roster_of_dead_rank0(void) {
    char dir[PATH_MAX], roster[PATH_MAX + 64];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r[3];
    for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, "roster", "roster", NULL, k, 3, "a w");
    hn_fr_recovery_path(dir, "roster", 0, -1, roster, sizeof roster);
    int made = 0;
    double took;
    for (double t0 = hn_fr_now(); made < 3 && hn_fr_now() - t0 < 30; usleep(10000))
        for (int k = made = 0; k < 3; k++) made += hn_fr_allgathered("roster", k, 0, &took, NULL, 0) == 0;
    CU_ASSERT_FATAL(made == 3);
    CU_ASSERT_EQUAL(access(roster, F_OK), 0);
    hn_fr_kill(&r[0]);
    hn_fr_go(&r[1]);
    hn_fr_finish(&r[1]);
    CU_ASSERT_EQUAL(access(roster, F_OK), 0); /* rank 2 lives: a restarted rank 0 would join it */
    hn_fr_go(&r[2]);
    hn_fr_finish(&r[2]);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* What the sweeps remove a dead writer's join with (bootstrap_file/file_sweep.c): only the file
 * they read. A restarted rank may put its presence over the dead one's between the read and the
 * removal (heal_file_test lost one so under load); that file is put back, whole, and nothing is
 * left aside. */
static void test_removes_only_the_file_read(void) {
    char host[128], dir[PATH_MAX], path[PATH_MAX + 64];
    this_host(host, sizeof host);
    hn_fr_new_dir(dir, sizeof dir);
    uint8_t dead[1024], live[1024], *now = NULL;
    size_t dead_len = hn_fr_make_join(dead, sizeof dead, "sweep", 0, 3, 1, hn_fr_dead_pid(), host, SECRET);
    size_t live_len = hn_fr_make_join(live, sizeof live, "sweep", 0, 3, 1, (uint32_t)getpid(), host, SECRET);
    hn_fr_recovery_path(dir, "sweep", 0, 1, path, sizeof path);
    hn_fr_put_file(path, live, live_len); /* the restarted rank's, put since the dead one's was read */
    CU_ASSERT_EQUAL(hidet_nccl__bf_remove_if_same(path, dead, dead_len), 0);
    FILE *f = fopen(path, "rb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    now = malloc(live_len + 1);
    CU_ASSERT_EQUAL(fread(now, 1, live_len + 1, f), live_len);
    CU_ASSERT_EQUAL(memcmp(now, live, live_len), 0);
    fclose(f);
    free(now);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 1); /* nothing left under a temporary name */
    hn_fr_put_file(path, dead, dead_len); /* the dead one's, unchanged since it was read: it goes */
    CU_ASSERT_EQUAL(hidet_nccl__bf_remove_if_same(path, dead, dead_len), 1);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
    CU_ASSERT_EQUAL(hidet_nccl__bf_remove_if_same(path, dead, dead_len), 0); /* nothing there */
}

int main(void) {
    if (hn_fr_begin("file_recover_tidy") != 0) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    static const hn_test_t tests[] = {
        {"all join and end at once: nothing stays", test_all_join_end_at_once},
        {"a round that timed out: nothing stays", test_round_timed_out},
        {"a rank dead before the first round ended: nothing stays", test_dead_before_first_round},
        {"an ended job's decisions: stale, removed", test_stale_decisions},
        {"an ended job's joins: stale, removed", test_stale_joins},
        {"a killed writer's temporary file goes with the next job", test_orphaned_temporary},
        {"a second user's .leftout mark is not trusted", test_foreign_leftout_mark},
        {"a later round that left out a rank that ends last: nothing stays", test_later_round_left_out},
        {"rank 0 killed, the others end: its roster goes with the last", test_roster_of_dead_rank0},
        {"a dead writer's join goes only if it is still the file read", test_removes_only_the_file_read},
        {NULL, NULL},
    };
    return hn_run_tests("file_recover_tidy", tests);
}
