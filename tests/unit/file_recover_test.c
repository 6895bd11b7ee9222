/* The shared-file bootstrap's recovery round, case by case, with real processes (forked from
 * this test, each a rank running a little script of calls: tests/file_ranks.h): a rank alive
 * that never joins is left out after wait_s and told so when it comes; a decider that dies
 * before deciding is taken over; a wait on a dead peer of this host, or on one that went to
 * recover, fails at once; news of a round reaches the others; one rank alone; nothing is left in
 * the directory. Decisions and joins that are not this round's: file_recover_hostile_test.c. */
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"
#include "tests/file_ranks.h"

/* Two ranks recover, the third lives but never joins within wait_s: rank 0 decides {0, 1} after
 * wait_s; the third, joining later, is told it was left out and which ranks went on; the two go
 * on as a job of two. (a) the late one comes while the others still run (rank 0 tidies at its
 * end, seeing the late one's mark), (b) after they ended (the late one tidies: their processes
 * are gone). Nothing is left either way. */
static void left_out(int late_after_end) {
    char dir[PATH_MAX], key[32];
    hn_fr_new_dir(dir, sizeof dir);
    snprintf(key, sizeof key, "late%d", late_after_end);
    hn_fr_rank_t r0 = hn_fr_start(dir, key, key, NULL, 0, 3, "a r2 w a");
    hn_fr_rank_t r1 = hn_fr_start(dir, key, key, NULL, 1, 3, "a r2 w a");
    hn_fr_rank_t r2 = hn_fr_start(dir, key, key, NULL, 2, 3, "a w r10");
    hn_fr_recovered_t a, b, c;
    if (late_after_end) {
        hn_fr_go(&r0);
        hn_fr_go(&r1);
        hn_fr_finish(&r0);
        hn_fr_finish(&r1);
        hn_fr_go(&r2);
        hn_fr_finish(&r2);
    } else {
        char path[PATH_MAX + 64];
        hn_fr_recovery_path(dir, key, 1, -1, path, sizeof path);
        CU_ASSERT(hn_fr_wait_for(path, 20)); /* decided */
        usleep(100 * 1000);
        hn_fr_go(&r2);
        hn_fr_finish(&r2);
        hn_fr_go(&r0);
        hn_fr_go(&r1);
        hn_fr_finish(&r0);
        hn_fr_finish(&r1);
    }
    CU_ASSERT_FATAL(hn_fr_recovered(key, 0, 0, &a) && hn_fr_recovered(key, 1, 0, &b) && hn_fr_recovered(key, 2, 0, &c));
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
    CU_ASSERT_EQUAL(hn_fr_allgathered(key, 0, 1, &took, NULL, 0), 0); /* a job of two now */
    CU_ASSERT_EQUAL(hn_fr_allgathered(key, 1, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}
static void test_left_out_while_running(void) { left_out(0); }
static void test_left_out_after_end(void) { left_out(1); }

/* The decider dies before it decides: rank 0 joins and waits (as decider) for rank 2, which
 * lives but has not joined; rank 0 is killed; rank 1 takes over and decides {1, 2} as soon as
 * rank 2 joins, long before wait_s (20 s). */
static void test_decider_dies(void) {
    char dir[PATH_MAX], p0[PATH_MAX + 64], p1[PATH_MAX + 64];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "takeover", "takeover", NULL, 0, 3, "a r40");
    hn_fr_rank_t r1 = hn_fr_start(dir, "takeover", "takeover", NULL, 1, 3, "a r40 a");
    hn_fr_rank_t r2 = hn_fr_start(dir, "takeover", "takeover", NULL, 2, 3, "a w r40 a");
    hn_fr_recovery_path(dir, "takeover", 1, 0, p0, sizeof p0);
    hn_fr_recovery_path(dir, "takeover", 1, 1, p1, sizeof p1);
    CU_ASSERT_FATAL(hn_fr_wait_for(p0, 20) && hn_fr_wait_for(p1, 20));
    usleep(50 * 1000);
    hn_fr_kill(&r0);
    double t0 = hn_fr_now();
    hn_fr_go(&r2);
    hn_fr_finish(&r1);
    hn_fr_finish(&r2);
    double took = hn_fr_now() - t0;
    hn_fr_recovered_t b, c;
    CU_ASSERT_FATAL(hn_fr_recovered("takeover", 1, 0, &b) && hn_fr_recovered("takeover", 2, 0, &c));
    printf("\n    rank 0 killed before deciding: ranks 1, 2: %d, %d (kept %s), %.2f s after rank 2 was let go", b.st,
           c.st, b.kept, took);
    CU_ASSERT(b.st == 0 && c.st == 0 && strcmp(b.kept, "011") == 0 && strcmp(c.kept, "011") == 0);
    CU_ASSERT(b.rank == 0 && b.size == 2 && c.rank == 1 && c.size == 2);
    CU_ASSERT(took < 5);
    double t;
    CU_ASSERT_EQUAL(hn_fr_allgathered("takeover", 1, 1, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("takeover", 2, 1, &t, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0); /* the dead decider's join went with the sweep */
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
        hn_fr_new_dir(dir, sizeof dir);
        hn_fr_rank_t r[3];
        int third = 3 - cases[i].victim - cases[i].watcher;
        for (int k = 0; k < 3; k++) /* the third rank is in the second allgather too */
            r[k] = hn_fr_start(dir, cases[i].key, cases[i].key, NULL, k, 3,
                         k == cases[i].victim ? cases[i].victim_steps : cases[i].watcher_steps);
        hn_fr_go(&r[cases[i].watcher]);
        hn_fr_go(&r[third]);
        usleep(100 * 1000); /* they wait */
        hn_fr_go(&r[cases[i].victim]);
        if (cases[i].victim_steps[4] == 'k') {
            waitpid(r[cases[i].victim].pid, NULL, 0); /* reaped at once, as a launcher does */
            close(r[cases[i].victim].go);
        }
        hn_fr_finish(&r[cases[i].watcher]);
        hn_fr_kill(&r[third]); /* a reader whose root failed but lives would wait for its deadline */
        if (cases[i].victim_steps[4] != 'k') hn_fr_finish(&r[cases[i].victim]);
        double took = -1;
        int st = hn_fr_allgathered(cases[i].key, cases[i].watcher, 1, &took, msg, sizeof msg);
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
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r[3] = {hn_fr_start(dir, "news", "news", NULL, 0, 3, "a n0 n5000 r10 a"),
                   hn_fr_start(dir, "news", "news", NULL, 1, 3, "a n0 n5000 r10 a"),
                   hn_fr_start(dir, "news", "news", NULL, 2, 3, "a n0 s300 r10 a")};
    for (int i = 0; i < 3; i++) hn_fr_finish(&r[i]);
    for (int i = 0; i < 3; i++) {
        char before[256], heard[256], rec[4096], after[4096];
        hn_fr_line_of("news", i, "news", 0, before, sizeof before);
        hn_fr_line_of("news", i, "news", 1, heard, sizeof heard);
        hn_fr_line_of("news", i, "recover", 0, rec, sizeof rec);
        hn_fr_line_of("news", i, "allgather", 1, after, sizeof after);
        CU_ASSERT(strncmp(before, "news 0 0 ", 9) == 0);
        if (i < 2) {
            double took = -1;
            CU_ASSERT(sscanf(heard, "news 0 1 %lf", &took) == 1 && took < 2.0);
            printf("\n    rank %d heard of rank 2's round after %.3f s", i, took);
        }
        CU_ASSERT(strncmp(rec, "recover 0 ", 10) == 0 && strstr(rec, " 3 ") != NULL && strstr(rec, " 111 ") != NULL);
        CU_ASSERT(strncmp(after, "allgather 0 ", 12) == 0);
    }
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* One rank: recover takes no file and keeps it; a bad epoch is refused with the numbers. */
static void test_alone(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "alone", "alone", NULL, 0, 1, "a r5 a r5 a");
    hn_fr_finish(&r0);
    hn_fr_recovered_t a, b;
    CU_ASSERT_FATAL(hn_fr_recovered("alone", 0, 0, &a) && hn_fr_recovered("alone", 0, 1, &b));
    CU_ASSERT(a.st == 0 && b.st == 0 && a.n_kept == 1 && b.size == 1);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
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
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

int main(void) {
    if (hn_fr_begin("file_recover") != 0) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    static const hn_test_t tests[] = {
        {"a rank that never joins is left out after wait_s, told when it comes (others running)",
         test_left_out_while_running},
        {"... and when it comes after the others ended", test_left_out_after_end},
        {"a decider that dies before deciding is taken over", test_decider_dies},
        {"a wait on a peer that left fails at once", test_dead_peer_fails_fast},
        {"news of a round: the others hear it and join", test_news},
        {"one rank; a bad epoch", test_alone},
        {NULL, NULL},
    };
    return hn_run_tests("file_recover", tests);
}
