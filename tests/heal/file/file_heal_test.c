/* The shared-file bootstrap's heal round, case by case, with real processes (forked from this
 * test, each a rank running a little script of bootstrap calls: tests/file_ranks.h). A rank of a
 * job that forms is never taken for a restarted one (a slow rank, a rank killed in the first
 * round and started again), a restarted one always is; the members take it back in under its
 * job rank as soon as it asks; refused, with the reason at the joiner and a warning at the
 * decider: a process for a rank that is a live member, the second of two processes for one rank,
 * a request that fails its checks; a joiner that dies waiting is dropped; a member that dies in
 * the round is left out; a joiner that comes after a round waits for the next (or its deadline,
 * which names the job and its rank); a heal round begun is news to the members; nothing is left
 * in the directory. */
#include <dirent.h>
#include <limits.h>
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
#include "tests/deadline.h"
#include "tests/file_ranks.h"

/* Files in dir whose names contain part, temporary files (being written) aside (none printed). */
static int count_named(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.' && strstr(e->d_name, part) && !strstr(e->d_name, ".tmp.");
    if (d != NULL) closedir(d);
    return n;
}

/* Waits until `count` files of dir contain part; 1 if they came. */
static int wait_named(const char *dir, const char *part, int count, const char *what) {
    int held;
    HN_WAIT_FOR(held, count_named(dir, part) >= count, 30, what);
    return held;
}

/* A join of heal round `epoch` by rank r (numbering before the round), or its decision (r -1), is there. */
static int wait_round_file(const char *dir, const char *key, uint64_t epoch, int r, const char *what) {
    char path[PATH_MAX + 64];
    hn_fr_recovery_path(dir, key, epoch, r, path, sizeof path);
    int came = hn_fr_wait_for(path, hn_test_scaled(30));
    if (!came) printf("\n    waited for %s (%s): it did not come", what, path);
    return came;
}

/* Reaps a rank that killed itself (as a launcher does). */
static void reap(hn_fr_rank_t *r) {
    waitpid(r->pid, NULL, 0);
    close(r->go);
}

/* 1 once the rank wrote its heal line nth. */
static int healed(const char *label, int rank, int nth) {
    char line[256];
    hn_fr_line_of(label, rank, "heal ", nth, line, sizeof line);
    return line[0] != '\0';
}

static void expect_heal(const char *label, int rank, int nth, int st, const char *members, const char *joined,
                        int new_rank, int size, hn_fr_healed_t *h) {
    CU_ASSERT_FATAL(hn_fr_healed(label, rank, nth, h));
    printf("\n    %s rank %d heal %d: st %d in %.3f s, members %s joined %s, rank %d of %d%s%.300s", label, rank, nth,
           h->st, h->took, h->members, h->joined, h->rank, h->size, h->msg[0] ? ": " : "", h->msg);
    CU_ASSERT_EQUAL(h->st, st);
    if (st != 0) return;
    CU_ASSERT_STRING_EQUAL(h->members, members);
    CU_ASSERT_STRING_EQUAL(h->joined, joined);
    CU_ASSERT_EQUAL(h->rank, new_rank);
    CU_ASSERT_EQUAL(h->size, size);
}

/* A slow rank of a job that forms is not a joiner: rank 2 comes once rank 0 claimed the first
 * round and rank 1 answered; and rank 2 killed after it answered and started again (before the
 * root published: rank 1 holds the round) is still that rank coming back. Every rank says
 * joining 0 and the round ends well on all. */
static void test_forming_ranks_are_not_joiners(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "slow", "slow", NULL, 0, 3, "a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "slow", "slow", NULL, 1, 3, "a");
    CU_ASSERT_FATAL(wait_named(dir, ".0.hello.1", 1, "rank 1's answer to the first round"));
    hn_fr_rank_t r2 = hn_fr_start(dir, "slow", "slow", NULL, 2, 3, "a");
    hn_fr_finish(&r0);
    hn_fr_finish(&r1);
    hn_fr_finish(&r2);
    double took;
    for (int r = 0; r < 3; r++) {
        CU_ASSERT_EQUAL(hn_fr_joining("slow", r), 0);
        CU_ASSERT_EQUAL(hn_fr_allgathered("slow", r, 0, &took, NULL, 0), 0);
    }
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);

    hn_fr_new_dir(dir, sizeof dir);
    r0 = hn_fr_start(dir, "back", "back", NULL, 0, 3, "a");
    r1 = hn_fr_start(dir, "back", "back", NULL, 1, 3, "w a");
    r2 = hn_fr_start(dir, "back", "back", NULL, 2, 3, "a");
    CU_ASSERT_FATAL(wait_named(dir, ".0.hello.2", 1, "rank 2's answer to the first round"));
    hn_fr_kill(&r2); /* answered, then died: the root waits for rank 1 still */
    hn_fr_rank_t again = hn_fr_start(dir, "back", "back-again", NULL, 2, 3, "a");
    int held;
    HN_WAIT_FOR(held, hn_fr_joining("back-again", 2) >= 0, 30, "the restarted rank 2's bootstrap");
    CU_ASSERT(held);
    hn_fr_go(&r1);
    hn_fr_finish(&r0);
    hn_fr_finish(&r1);
    hn_fr_finish(&again);
    printf("\n    slow rank 2 joining %d; rank 2 killed in the first round and started again: joining %d",
           hn_fr_joining("slow", 2), hn_fr_joining("back-again", 2));
    CU_ASSERT_EQUAL(hn_fr_joining("back-again", 2), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("back-again", 2, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("back", 0, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("back", 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Rank 1 dies after the first round; the members begin a heal round (wait_s 10 s) and wait; rank
 * 1 started again says joining 1, asks, and is taken back in as rank 1 of 3 at once (not after
 * wait_s); then an allgather of the three. Then the other order: the joiner asks first, the
 * members heal after. */
static void heal_one(int joiner_first) {
    char dir[PATH_MAX], key[32], jl[40];
    hn_fr_new_dir(dir, sizeof dir);
    snprintf(key, sizeof key, "basic%d", joiner_first);
    snprintf(jl, sizeof jl, "%s-j", key);
    hn_fr_rank_t r0 = hn_fr_start(dir, key, key, NULL, 0, 3, "a w h20 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, key, key, NULL, 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, key, key, NULL, 2, 3, "a w h20 a");
    reap(&r1);
    hn_fr_rank_t j1;
    double t0 = hn_fr_now();
    if (joiner_first) {
        j1 = hn_fr_start(dir, key, jl, NULL, 1, 3, "h20 a");
        CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the restarted rank 1's request"));
        t0 = hn_fr_now();
        hn_fr_go(&r0);
        hn_fr_go(&r2);
    } else {
        hn_fr_go(&r0);
        hn_fr_go(&r2);
        CU_ASSERT_FATAL(wait_round_file(dir, key, 1, 0, "rank 0's join") && wait_round_file(dir, key, 1, 2, "rank 2's join"));
        t0 = hn_fr_now();
        j1 = hn_fr_start(dir, key, jl, NULL, 1, 3, "h20 a");
    }
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    hn_fr_finish(&j1);
    hn_fr_healed_t a, b, c;
    expect_heal(key, 0, 0, 0, "111", "010", 0, 3, &a);
    expect_heal(key, 2, 0, 0, "111", "010", 2, 3, &b);
    expect_heal(jl, 1, 0, 0, "111", "010", 1, 3, &c);
    CU_ASSERT_EQUAL(hn_fr_joining(jl, 1), 1);
    CU_ASSERT_EQUAL(hn_fr_joining(key, 0), 0);
    double decided = (a.at > b.at ? a.at : b.at) - t0;
    printf("\n    %s: the round ended %.3f s after the %s (wait_s 10 s)", key, decided,
           joiner_first ? "members began it" : "joiner was started");
    CU_ASSERT(decided < 5.0); /* as soon as every rank asked, not after wait_s */
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered(key, 0, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered(key, 2, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered(jl, 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}
static void test_heal_joiner_comes_later(void) { heal_one(0); }
static void test_heal_joiner_asked_first(void) { heal_one(1); }

/* A process started as rank 1 while rank 1 lives: it is a joiner (the job formed), asks, and is
 * refused by the members' heal round (a WARN at the decider, the reason at the joiner); rank 1
 * is unharmed: the members go on whole, and allgather. */
static void test_live_rank_refused(void) {
    char dir[PATH_MAX], err[16384];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r[3];
    for (int k = 0; k < 3; k++) r[k] = hn_fr_start(dir, "live", "live", NULL, k, 3, "a w h20 a");
    CU_ASSERT_FATAL(wait_named(dir, ".decision", 1, "the roster (the first round ended)"));
    hn_fr_rank_t extra = hn_fr_start(dir, "live", "live-x", NULL, 1, 3, "h20");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the extra process's request"));
    for (int k = 0; k < 3; k++) hn_fr_go(&r[k]);
    for (int k = 0; k < 3; k++) hn_fr_finish(&r[k]);
    hn_fr_finish(&extra);
    hn_fr_healed_t h, x;
    for (int k = 0; k < 3; k++) expect_heal("live", k, 0, 0, "111", "000", k, 3, &h);
    expect_heal("live-x", 1, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "", "", 0, 0, &x);
    CU_ASSERT_EQUAL(hn_fr_joining("live-x", 1), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(x.msg, "its job rank is a live member"));
    CU_ASSERT_PTR_NOT_NULL(strstr(x.msg, "job key 'live'"));
    hn_fr_err_of("live", 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused the request"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "job rank 1 is a live member"));
    double took;
    for (int k = 0; k < 3; k++) CU_ASSERT_EQUAL(hn_fr_allgathered("live", k, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Unix ms of a file's change. */
static long long mtime_ms(const char *dir, const char *part) {
    DIR *d = opendir(dir);
    long long ms = 0;
    for (struct dirent *e; d != NULL && (e = readdir(d)) != NULL;) {
        struct stat st;
        if (strstr(e->d_name, part) == NULL || fstatat(dirfd(d), e->d_name, &st, 0) != 0) continue;
        ms = (long long)st.st_mtim.tv_sec * 1000 + st.st_mtim.tv_nsec / 1000000;
    }
    if (d != NULL) closedir(d);
    return ms;
}

static long long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Two processes started as dead rank 1: the one that asked first is taken in, the second is
 * refused (the reason at it, a WARN at the decider); nothing is left. */
static void test_two_joiners_one_rank(void) {
    char dir[PATH_MAX], err[16384];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "twice", "twice", NULL, 0, 3, "a w h20 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "twice", "twice", NULL, 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "twice", "twice", NULL, 2, 3, "a w h20 a");
    reap(&r1);
    hn_fr_rank_t first = hn_fr_start(dir, "twice", "twice-1st", NULL, 1, 3, "h20 a");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the first restarted rank 1's request"));
    long long asked = mtime_ms(dir, ".request.1."); /* the second asks in a later millisecond */
    int held;
    HN_WAIT_FOR(held, now_ms() > asked + 1, 5, "the clock past the first request's");
    CU_ASSERT(held);
    hn_fr_rank_t second = hn_fr_start(dir, "twice", "twice-2nd", NULL, 1, 3, "h20 a");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 2, "the second restarted rank 1's request"));
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    hn_fr_finish(&first);
    hn_fr_finish(&second);
    hn_fr_healed_t h, a, b;
    expect_heal("twice", 0, 0, 0, "111", "010", 0, 3, &h);
    expect_heal("twice-1st", 1, 0, 0, "111", "010", 1, 3, &a);
    expect_heal("twice-2nd", 1, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "", "", 0, 0, &b);
    CU_ASSERT_PTR_NOT_NULL(strstr(b.msg, "another process asked for that rank first"));
    hn_fr_err_of("twice", 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "asked for job rank 1 first and is taken in"));
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("twice-1st", 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Rank 1 dies and nobody starts it again: the heal round (deadline 4 s) ends after wait_s (2 s)
 * with the two members, nobody taken in; they go on as a job of two. */
static void test_nobody_to_admit(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "nobody", "nobody", NULL, 0, 3, "a w h4 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "nobody", "nobody", NULL, 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "nobody", "nobody", NULL, 2, 3, "a w h4 a");
    reap(&r1);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    hn_fr_healed_t a, b;
    expect_heal("nobody", 0, 0, 0, "101", "000", 0, 2, &a);
    expect_heal("nobody", 2, 0, 0, "101", "000", 1, 2, &b);
    CU_ASSERT(a.took >= 1.9 && a.took < 4.0); /* wait_s, within the deadline */
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("nobody", 0, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("nobody", 2, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Ranks 1 and 2 of 4 die; a joiner for rank 1 asks; the members' round waits for one for rank 2;
 * the joiner for rank 1 dies while it waits (its request is dropped); the joiners for rank 2 and
 * again rank 1 ask: the round takes those two in, never the dead one's request. */
static void test_joiner_dies_in_round(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "jdies", "jdies", NULL, 0, 4, "a w h20 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "jdies", "jdies", NULL, 1, 4, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "jdies", "jdies", NULL, 2, 4, "a k");
    hn_fr_rank_t r3 = hn_fr_start(dir, "jdies", "jdies", NULL, 3, 4, "a w h20 a");
    reap(&r1);
    reap(&r2);
    hn_fr_rank_t j1 = hn_fr_start(dir, "jdies", "jdies-1", NULL, 1, 4, "h20 a");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the first joiner's request"));
    hn_fr_go(&r0);
    hn_fr_go(&r3);
    CU_ASSERT_FATAL(wait_round_file(dir, "jdies", 1, 0, "rank 0's join") && wait_round_file(dir, "jdies", 1, 3, "rank 3's join"));
    hn_fr_kill(&j1); /* dies while the round waits for a joiner for rank 2 */
    hn_fr_rank_t j2 = hn_fr_start(dir, "jdies", "jdies-2", NULL, 2, 4, "h20 a");
    hn_fr_rank_t j1b = hn_fr_start(dir, "jdies", "jdies-1b", NULL, 1, 4, "h20 a");
    hn_fr_finish(&r0);
    hn_fr_finish(&r3);
    hn_fr_finish(&j2);
    hn_fr_finish(&j1b);
    hn_fr_healed_t h;
    expect_heal("jdies", 0, 0, 0, "1111", "0110", 0, 4, &h);
    expect_heal("jdies", 3, 0, 0, "1111", "0110", 3, 4, &h);
    expect_heal("jdies-2", 2, 0, 0, "1111", "0110", 2, 4, &h);
    expect_heal("jdies-1b", 1, 0, 0, "1111", "0110", 1, 4, &h);
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("jdies-1b", 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Rank 1 dies; the members begin a heal round (deadline 6 s: wait_s 3 s); member 2 dies in it
 * (after it joined); the joiner for rank 1 comes: the round ends at wait_s with rank 0 and the
 * joiner (2 is dead, nobody asked for it), who go on as a job of two. */
static void test_member_dies_in_round(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "mdies", "mdies", NULL, 0, 3, "a w h6 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "mdies", "mdies", NULL, 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "mdies", "mdies", NULL, 2, 3, "a w h6 a");
    reap(&r1);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    CU_ASSERT_FATAL(wait_round_file(dir, "mdies", 1, 2, "rank 2's join"));
    hn_fr_kill(&r2);
    hn_fr_rank_t j1 = hn_fr_start(dir, "mdies", "mdies-j", NULL, 1, 3, "h20 a");
    hn_fr_finish(&r0);
    hn_fr_finish(&j1);
    hn_fr_healed_t a, b;
    expect_heal("mdies", 0, 0, 0, "110", "010", 0, 2, &a);
    expect_heal("mdies-j", 1, 0, 0, "110", "010", 1, 2, &b);
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("mdies", 0, 1, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_allgathered("mdies-j", 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* Rank 1 dies; the members heal with nobody to take in (round 1); a joiner started after that
 * round is not taken by it: it waits, and the members' next round (2) takes it in. A joiner that
 * comes when no round follows fails at its deadline, naming the job and its rank. */
static void test_joiner_after_round(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "after", "after", NULL, 0, 3, "a w h2 w h20 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "after", "after", NULL, 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "after", "after", NULL, 2, 3, "a w h2 w h20 a");
    reap(&r1);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    int held;
    HN_WAIT_FOR(held, healed("after", 0, 0) && healed("after", 2, 0),
                30, "the members' first heal round");
    CU_ASSERT(held);
    hn_fr_rank_t j1 = hn_fr_start(dir, "after", "after-j", NULL, 1, 3, "h20 a");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the late joiner's request"));
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    hn_fr_finish(&j1);
    hn_fr_healed_t h;
    expect_heal("after", 0, 0, 0, "101", "000", 0, 2, &h);
    expect_heal("after", 0, 1, 0, "111", "010", 0, 3, &h);
    expect_heal("after", 2, 1, 0, "111", "010", 2, 3, &h);
    expect_heal("after-j", 1, 0, 0, "111", "010", 1, 3, &h);
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("after-j", 1, 0, &took, NULL, 0), 0);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);

    /* no round follows: the deadline, naming the job and the rank */
    hn_fr_new_dir(dir, sizeof dir);
    r0 = hn_fr_start(dir, "never", "never", NULL, 0, 3, "a w h2 w");
    r1 = hn_fr_start(dir, "never", "never", NULL, 1, 3, "a k");
    r2 = hn_fr_start(dir, "never", "never", NULL, 2, 3, "a w h2 w");
    reap(&r1);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    HN_WAIT_FOR(held, healed("never", 0, 0) && healed("never", 2, 0),
                30, "the members' heal round");
    CU_ASSERT(held);
    j1 = hn_fr_start(dir, "never", "never-j", NULL, 1, 3, "h2");
    hn_fr_finish(&j1);
    expect_heal("never-j", 1, 0, HIDET_NCCL_ERROR_TIMEOUT, "", "", 0, 0, &h);
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg, "job rank 1 of 3 (job key 'never'"));
    CU_ASSERT_PTR_NOT_NULL(strstr(h.msg, "waited"));
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* A request that fails its checks (another secret's MAC; bytes that are no request) is refused
 * at the decider with a WARN naming it, never taken: the round ends at wait_s without rank 1.
 * A process started again as rank 1 with another secret is refused with the reason while the job
 * runs (the members hold on after the round until it has its answer: a joiner refused for its
 * checks is not waited for, so a job that ends first leaves it to its deadline, as documented). */
static void test_request_fails_checks(void) {
    char dir[PATH_MAX], err[16384], path[PATH_MAX + 128];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "checks", "checks", "s3cret-s3cret-s3cret", 0, 3, "a w h4 w a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "checks", "checks", "s3cret-s3cret-s3cret", 1, 3, "a k");
    hn_fr_rank_t r2 = hn_fr_start(dir, "checks", "checks", "s3cret-s3cret-s3cret", 2, 3, "a w h4 w a");
    reap(&r1);
    CU_ASSERT_FATAL(wait_named(dir, ".0.decision", 1, "the roster (the first round ended)"));
    hn_fr_rank_t other = hn_fr_start(dir, "checks", "checks-x", "another-secret-0123", 1, 3, "h20");
    CU_ASSERT_FATAL(wait_named(dir, ".request.1.", 1, "the other secret's request"));
    snprintf(path, sizeof path, "%s/hidet-nccl.checks.0.request.1.0123456789abcdef", dir);
    hn_fr_put_file(path, (const uint8_t *)"not a request at all, but long enough to be read as one......"
                                          "...........................................................",
                   120);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    int held;
    HN_WAIT_FOR(held, healed("checks-x", 1, 0), 30, "the refused joiner's answer");
    CU_ASSERT(held);
    hn_fr_go(&r0);
    hn_fr_go(&r2);
    hn_fr_finish(&r0);
    hn_fr_finish(&r2);
    hn_fr_finish(&other);
    hn_fr_healed_t h, x;
    expect_heal("checks", 0, 0, 0, "101", "000", 0, 2, &h);
    expect_heal("checks-x", 1, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "", "", 0, 0, &x);
    CU_ASSERT_EQUAL(hn_fr_joining("checks-x", 1), 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(x.msg, "failed the decider's checks"));
    CU_ASSERT_PTR_NOT_NULL(strstr(x.msg, "job secret"));
    hn_fr_err_of("checks", 0, err, sizeof err);
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused a request to be taken back in"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "0123456789abcdef"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err, "MAC"));
    CU_ASSERT_EQUAL(count_named(dir, "0123456789abcdef"), 1); /* not the job's to remove */
    unlink(path);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* A heal round begun by one member is news to the others (hidet_nccl_bootstrap_news, what
 * comm_wait asks): they hear of it within a poll or two and join; nobody lost, nobody taken in. */
static void test_news(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r[3] = {hn_fr_start(dir, "hnews", "hnews", NULL, 0, 3, "a n0 n20000 h10 a"),
                         hn_fr_start(dir, "hnews", "hnews", NULL, 1, 3, "a n0 n20000 h10 a"),
                         hn_fr_start(dir, "hnews", "hnews", NULL, 2, 3, "a w h10 a")};
    int held;
    char line[256];
    HN_WAIT_FOR(held, (hn_fr_line_of("hnews", 0, "news", 0, line, sizeof line), line[0]) &&
                          (hn_fr_line_of("hnews", 1, "news", 0, line, sizeof line), line[0]),
                30, "ranks 0 and 1 looking for news");
    CU_ASSERT(held);
    hn_fr_go(&r[2]);
    for (int i = 0; i < 3; i++) hn_fr_finish(&r[i]);
    for (int i = 0; i < 2; i++) {
        double took = -1;
        hn_fr_line_of("hnews", i, "news", 1, line, sizeof line);
        CU_ASSERT(sscanf(line, "news 0 1 %lf", &took) == 1 && took < 2.0);
        printf("\n    rank %d heard of rank 2's heal round after %.3f s", i, took);
    }
    hn_fr_healed_t h;
    for (int i = 0; i < 3; i++) expect_heal("hnews", i, 0, 0, "111", "000", i, 3, &h);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* A job of one heals alone (no file); a heal round of a wrong epoch is refused with the numbers. */
static void test_alone_and_epochs(void) {
    char dir[PATH_MAX];
    hn_fr_new_dir(dir, sizeof dir);
    hn_fr_rank_t r0 = hn_fr_start(dir, "one", "one", NULL, 0, 1, "h5 a h5 a");
    hn_fr_finish(&r0);
    hn_fr_healed_t h;
    expect_heal("one", 0, 0, 0, "1", "0", 0, 1, &h);
    expect_heal("one", 0, 1, 0, "1", "0", 0, 1, &h);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
    hidet_nccl_file_bootstrap_params_t p = HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT;
    p.dir = dir;
    p.job_key = "epochs";
    p.rank = 0;
    p.nranks = 2;
    void *state = NULL;
    char msg[1024] = "";
    hidet_nccl_bootstrap_init_args_t args = {sizeof args, 5.0, -1, -1, -1, -1, "test"};
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_file_v4.init(&p, &args, &state, msg, sizeof msg), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(hidet_nccl_bootstrap_file_v4.joining(state), 0);
    unsigned char m[2], j[2];
    uint64_t epoch = 3;
    CU_ASSERT_EQUAL(hidet_nccl_bootstrap_file_v4.heal(state, &epoch, 1.0, 2.0, m, j, msg, sizeof msg),
                    HIDET_NCCL_ERROR_INVALID_ARGUMENT);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "heal round 3 asked of a bootstrap whose next round is 1"));
    hidet_nccl_bootstrap_file_v4.finalize(state, msg, sizeof msg);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

int main(void) {
    if (hn_fr_begin("file_heal") != 0) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    static const hn_test_t tests[] = {
        {"a slow rank, and a rank back in the first round, are not joiners", test_forming_ranks_are_not_joiners},
        {"a restarted rank is taken back in as soon as it asks (members first)", test_heal_joiner_comes_later},
        {"... (the joiner first)", test_heal_joiner_asked_first},
        {"a joiner for a live rank is refused; the member unharmed", test_live_rank_refused},
        {"two processes for one dead rank: the second refused", test_two_joiners_one_rank},
        {"nobody to take in: the members go on at wait_s", test_nobody_to_admit},
        {"a joiner that dies in the round is dropped", test_joiner_dies_in_round},
        {"a member that dies in the round is left out", test_member_dies_in_round},
        {"a joiner after a round waits for the next, or its deadline", test_joiner_after_round},
        {"a request that fails its checks is refused", test_request_fails_checks},
        {"a heal round is news to the members", test_news},
        {"a job of one; a wrong epoch", test_alone_and_epochs},
        {NULL, NULL},
    };
    return hn_run_tests("file_heal", tests);
}
