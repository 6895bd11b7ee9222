/* bootstrap_file_test's cases of jobs that meet where they should not (issue 15, items 5, 6, 7
 * and 14; issue 27, items 5 and 16 .. 19): two jobs with one key, two answers to one claim, a
 * reader that gave up, readers killed and started again, leftovers of dead writers and roots. */
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/bootstrap_file_test.h"
#include "tests/deadline.h"

/* A hello of round 0 of `key`, as rank `rank` of `world` (its writer: this test process). */
#define HELLO_FILE(out, key, world, rank, nonce, root_nonce)                                                 \
    hidet_nccl__bf_encode_hello((out), sizeof(out), (key), 0, (world), (rank), (nonce), (root_nonce), 1, "elsewhere", \
                                NULL, 0, 0)

/* Issue 15, item 7: a reader whose deadline passed after it answered (its hello renamed to
 * .gaveup, as a reader does) fails the round on the root, which would otherwise report
 * success for bytes nobody took; the root removes the .gaveup file. */
void test_reader_gave_up(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], quit[PATH_MAX + 80];
    new_dir(dir, sizeof dir);
    root_job_t job = {dir, "quitter", hn_test_scaled(10), 0, "", 0, 2};
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello(dir, "quitter", 9, 5.0), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.quitter.0.id", dir);
    CU_ASSERT(wait_for(path, 5)); /* the root published */
    snprintf(path, sizeof path, "%s/hidet-nccl.quitter.0.hello.1", dir);
    snprintf(quit, sizeof quit, "%s.gaveup", path);
    CU_ASSERT_EQUAL(rename(path, quit), 0);
    pthread_join(t, NULL);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, "rank 1 gave up before taking it"));
    CU_ASSERT(job.took < job.timeout / 2); /* at the mark, not at the deadline */
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
    /* A real reader with a short deadline, the root never coming: its hello is renamed, then
     * gone with the round's other leftovers when a root ends a round of that key. */
    CU_ASSERT_EQUAL(read_once(dir, "quitter2", 0.3, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_EQUAL(count_files(dir, ".gaveup"), 0); /* it never answered: there was no claim */
}

/* Issue 15, item 6: a second answer to one claim for the same rank (another job with the same
 * key) is a collision: the root fails and marks its claim, so that everyone of both jobs does. */
void test_two_answers_collide(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64];
    new_dir(dir, sizeof dir);
    root_job_t job = {dir, "twice", job_deadline(3), 0, "", 0, 3};
    pthread_t t;
    pthread_create(&t, NULL, root_thread, &job);
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 1, 1, 3, 30.0), 0); /* rank 1 of one job */
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 3, 2, 3, 30.0), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.twice.0.id", dir);
    CU_ASSERT(wait_for(path, 50)); /* the root published */
    CU_ASSERT_EQUAL(fake_hello_rank(dir, "twice", 2, 1, 3, 30.0), 0); /* then rank 1 of the other job */
    /* The claim is marked collided for the others to see while the root is still in its call
     * (issue 27, item 23: it lingers four of a reader's longest pauses, at least 0.2 s, then
     * removes it): looked for as a reader looks, only more often. */
    snprintf(path, sizeof path, "%s/hidet-nccl.twice.0.root", dir);
    int marked = 0;
    uint8_t buf[1024];
    hidet_nccl__bf_msg_t m;
    HN_WAIT_FOR(marked, read_msg(path, buf, sizeof buf, &m) && m.kind == HN_BF_KIND_CLAIM &&
                            (m.flags & HN_BF_CLAIM_COLLIDED), 3, "the claim marked collided");
    pthread_join(t, NULL);
    CU_ASSERT(marked);
    CU_ASSERT_EQUAL(job.st, HIDET_NCCL_ERROR_BOOTSTRAP);
    CU_ASSERT_PTR_NOT_NULL(strstr(job.msg, "two processes answered this round's claim as rank 1"));
    CU_ASSERT(job.took < job.timeout / 2); /* a collision fails at once, not at the deadline */
    CU_ASSERT_EQUAL(count_files(dir, ".root"), 0); /* then removed by its root */
}

/* Two jobs of 4 ranks with one key (labels[0] and labels[1]; each its secret from secrets, if
 * any): started as the pairs below start them, both roots late (200 ms) so that every reader
 * waits and both roots meet; pids[2 * r + j] is rank r of job j. */
static void spawn_same_key_pair(const char *dir, const char *key, char labels[2][32], const char *const *secrets,
                                pid_t pids[8]) {
    for (int r = 3; r >= 0; r--)
        for (int j = 0; j < 2; j++) {
            if (secrets) setenv("HIDET_NCCL_JOB_SECRET", secrets[j], 1);
            pids[2 * r + j] = spawn_as(dir, key, labels[j], r, 4, 1, 5, r == 0 ? 200 : 0);
        }
    if (secrets) unsetenv("HIDET_NCCL_JOB_SECRET");
}

/* Waits for a pair's 8 processes; returns how many failed. *said: 1 if one of them said why
 * (two processes as one rank, two jobs with one key): their stderr, kept by spawn_as. */
static int wait_same_key_pair(char labels[2][32], const pid_t pids[8], int *said) {
    int failed = 0;
    *said = 0;
    for (int i = 0; i < 8; i++) {
        failed += !exited_ok(pids[i]);
        char err[8192];
        err_of(labels[i % 2], i / 2, err, sizeof err);
        *said |= strstr(err, "two processes") != NULL || strstr(err, "two jobs") != NULL;
    }
    return failed;
}

/* Issue 15, item 6: two jobs started with the same key in one directory, many times: every
 * pair reports the collision (processes fail), and no pair has a rank holding the other job's
 * bytes without that failure. (Without a secret only the job has, a process of the other job
 * can take the bytes before the collision is seen; it never goes unreported: docs/bootstrap_file.md.)
 * The pairs run at the same time, each with its own key (jobs with other keys in one directory
 * never meet: property 3), each pair's processes started together as when the pairs ran one after
 * the other: a pair takes its readers' deadline (5 s: a reader whose root failed at the collision
 * waits for it that long), and the pairs now take it once, not 12 times. */
void test_same_key_jobs(void) {
    char dir[PATH_MAX], a[2 * 128 + 1], b[2 * 128 + 1], root_a[2 * 128 + 1], root_b[2 * 128 + 1];
    new_dir(dir, sizeof dir);
    enum { PAIRS = 12 };
    int wrong = 0, detected = 0, silent = 0, said_any = 0, pairs = PAIRS;
    char keys[PAIRS][32], labels[PAIRS][2][32];
    pid_t pids[PAIRS][8];
    g_keep_stderr = 1;
    for (int pair = 0; pair < pairs; pair++) {
        snprintf(keys[pair], sizeof keys[pair], "shared%d", pair);
        snprintf(labels[pair][0], sizeof labels[pair][0], "A%d", pair);
        snprintf(labels[pair][1], sizeof labels[pair][1], "B%d", pair);
        spawn_same_key_pair(dir, keys[pair], labels[pair], NULL, pids[pair]);
    }
    g_keep_stderr = 0;
    for (int pair = 0; pair < pairs; pair++) {
        int said, failed = wait_same_key_pair(labels[pair], pids[pair], &said);
        detected += failed > 0;
        said_any += said;
        const char *la = labels[pair][0], *lb = labels[pair][1];
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
    printf("\n  %d of %d pairs of same-key jobs reported the collision (%d saying two processes or jobs); %d ranks "
           "took the other job's bytes, in pairs that reported it\n", detected, pairs, said_any, wrong);
    CU_ASSERT_EQUAL(silent, 0);
    CU_ASSERT_EQUAL(detected, pairs);
    /* Issue 27, item 23: the collided claims were removed by their holders once nobody needed
     * them; item 19: a clean job with a key that collided, its readers first, works right away. */
    int claims = count_files(dir, ".root");
    if (claims) printf("  %d claims left behind\n", claims);
    CU_ASSERT_EQUAL(claims, 0);
    CU_ASSERT_EQUAL(run_job(dir, "shared0", 4, 1, job_deadline(4), 300), 0);
}

/* Issue 27, item 5: the same, each job with its own secret (HIDET_NCCL_JOB_SECRET, as
 * hidet-nccl-run gives every job): a rank never holds the other job's bytes, collision or not,
 * since a reader takes only an announce whose MAC its job's secret makes. Without secrets the
 * test above allows a taken-then-reported collision; here none may be taken. The pairs run at
 * once, as above. */
void test_same_key_jobs_with_secrets(void) {
    char dir[PATH_MAX], mine[2 * 128 + 1], root[2][2 * 128 + 1];
    new_dir(dir, sizeof dir);
    enum { PAIRS = 20 };
    int wrong = 0, said_any = 0, pairs = PAIRS;
    const char *labels[2] = {"SA", "SB"}, *secrets[2] = {"secret-of-job-A-0123456789", "secret-of-job-B-0123456789"};
    char keys[PAIRS][32], label[PAIRS][2][32];
    pid_t pids[PAIRS][8];
    g_keep_stderr = 1;
    for (int pair = 0; pair < pairs; pair++) {
        snprintf(keys[pair], sizeof keys[pair], "sec%d", pair);
        for (int j = 0; j < 2; j++) snprintf(label[pair][j], sizeof label[pair][j], "%s%d", labels[j], pair);
        spawn_same_key_pair(dir, keys[pair], label[pair], secrets, pids[pair]);
    }
    g_keep_stderr = 0;
    for (int pair = 0; pair < pairs; pair++) {
        int said;
        wait_same_key_pair(label[pair], pids[pair], &said);
        said_any += said;
        for (int j = 0; j < 2; j++) {
            id_of(label[pair][j], 0, 0, root[j]);
            for (int r = 1; r < 4; r++) {
                id_of(label[pair][j], r, 0, mine);
                wrong += mine[0] && strcmp(mine, root[j]) != 0;
            }
        }
    }
    printf("\n  %d pairs of same-key jobs with their own secrets (%d saying two processes or jobs): %d ranks took the "
           "other job's bytes\n", pairs, said_any, wrong);
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
void test_fresh_bootstrap_each_round(void) {
    char dir[PATH_MAX], ids[20][2 * 128 + 1];
    new_dir(dir, sizeof dir);
    CU_ASSERT_EQUAL(run_job(dir, "again", 4, -20, job_deadline(4), 0), 0);
    for (int round = 0; round < 20; round++) {
        CU_ASSERT(all_same_id("again", 4, round, ids[round]));
        if (round) CU_ASSERT_STRING_NOT_EQUAL(ids[round], ids[round - 1]);
    }
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Issue 15, item 14: temporary files of writers killed mid-write are removed by the root
 * that ends that round (issue 27: only those of writers of this host that are gone; a live
 * writer's, or one of another host, may be being written). */
void test_killed_writers_leftovers(void) {
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
    CU_ASSERT_EQUAL(run_job(dir, "killed", 3, 1, job_deadline(3), 0), 0);
    CU_ASSERT(all_same_id("killed", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 4);
    CU_ASSERT_EQUAL(count_files(dir, "c0ffee0"), 2);
    CU_ASSERT_EQUAL(count_files(dir, "killed.0.5."), 2);
}

/* Item 16: a stale .gaveup (any file at hello.<r>.gaveup, even an empty one) never fails the
 * next round with that key: only a mark that answers this round's claim counts. */
void test_stale_gaveup_ignored(void) {
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
    CU_ASSERT_EQUAL(run_job(dir, "stale16", 3, 1, job_deadline(3), 0), 0);
    CU_ASSERT(all_same_id("stale16", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0); /* the root removed them with the round's leftovers */
    /* As it happens: a reader answers a root's claim (a live one, of a root on another host), the
     * root fails to come, the reader gives up at its deadline and leaves its .gaveup; the job run
     * again with the same key once that claim expired must work. The claim is held 60 s, far past
     * the reader's 0.8 s, then put again with its time up: the same claim, expired. */
    put_claim(dir, "stale16b", 2, 60000, 1, 0, "elsewhere");
    CU_ASSERT_EQUAL(read_once(dir, "stale16b", 0.8, NULL), HIDET_NCCL_ERROR_TIMEOUT);
    CU_ASSERT_EQUAL(count_files(dir, "stale16b.0.hello.1.gaveup"), 1);
    put_claim(dir, "stale16b", 2, -1000, 1, 0, "elsewhere");
    CU_ASSERT_EQUAL(run_job(dir, "stale16b", 2, 1, job_deadline(2), 0), 0);
    CU_ASSERT(all_same_id("stale16b", 2, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 17: two processes as rank 1 and one root, one key, one directory, many times: the root
 * never says its bytes were taken when no reader took them (a reader that fails withdraws its
 * answer with a mark that the root counts as "not taken"). A reader that took them and then
 * failed at its end (a second process as its rank appeared after its round: issue 38, item 7)
 * took them: the root's round was right. */
void test_two_readers_one_rank(void) {
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
        id_of(lr, 0, 0, root_id);
        id_of(la, 1, 0, a_id);
        id_of(lb, 1, 0, b_id);
        root_ok += ok_r;
        root_ok_alone += ok_r && !a_id[0] && !b_id[0]; /* neither took the bytes */
        wrong += ok_r && ((ok_a && strcmp(a_id, root_id) != 0) + (ok_b && strcmp(b_id, root_id) != 0));
    }
    printf("\n  %d of %d roots said OK; %d of them while no reader took the bytes\n", root_ok, runs, root_ok_alone);
    CU_ASSERT_EQUAL(root_ok_alone, 0);
    CU_ASSERT_EQUAL(wrong, 0);
}

/* Item 18: a reader killed after it answered and started again is that rank coming back, not
 * a second job: the hello of a dead process of this host is stale. Here the root still waits
 * for rank 2 when rank 1 dies and comes back. */
void test_restarted_reader(void) {
    char dir[PATH_MAX], path[PATH_MAX + 64], id[257];
    new_dir(dir, sizeof dir);
    pid_t root = spawn(dir, "restart", 0, 3, 1, job_deadline(3), 0);
    pid_t first = spawn(dir, "restart", 1, 3, 1, job_deadline(3), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.restart.0.hello.1", dir);
    CU_ASSERT_FATAL(wait_for(path, 20));
    kill(first, SIGKILL);
    waitpid(first, NULL, 0);
    CU_ASSERT_EQUAL(access(path, F_OK), 0); /* its answer stays, as after a crash */
    pid_t again = spawn(dir, "restart", 1, 3, 1, job_deadline(3), 0);
    uint8_t buf[1024];
    hidet_nccl__bf_msg_t m;
    int back = 0; /* rank 1 is back (its new answer names it) while the root still waits for rank 2 */
    HN_WAIT_FOR(back, read_msg(path, buf, sizeof buf, &m) && m.pid == (uint32_t)again, 20, "the new rank 1's answer");
    CU_ASSERT(back);
    pid_t last = spawn(dir, "restart", 2, 3, 1, job_deadline(3), 0);
    CU_ASSERT(exited_ok(again));
    CU_ASSERT(exited_ok(last));
    CU_ASSERT(exited_ok(root));
    CU_ASSERT(all_same_id("restart", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 18, once the announce is out: rank 1's first process answered and died before it took
 * the bytes; rank 1 started again replaces that answer, and the root rewrites the announce for
 * it (a broadcast's bytes are the root's alone, so no rank can have taken other bytes). */
void test_restarted_after_publish(void) {
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
    pid_t root = spawn(dir, "restart2", 0, 2, -1, job_deadline(2), 0);
    snprintf(path, sizeof path, "%s/hidet-nccl.restart2.0.id", dir);
    CU_ASSERT_FATAL(wait_for(path, 20)); /* the root took the answer and published */
    kill(first, SIGKILL);
    waitpid(first, NULL, 0);
    pid_t again = spawn(dir, "restart2", 1, 2, -1, job_deadline(2), 0);
    CU_ASSERT(exited_ok(again));
    CU_ASSERT(exited_ok(root));
    CU_ASSERT(all_same_id("restart2", 2, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}

/* Item 19: a collided claim whose root is gone (a dead process of this host) is stale: a clean
 * job with the same key, its readers there before its root, works. */
void test_collided_claim_of_dead_root(void) {
    char dir[PATH_MAX], host[HN_BF_HOST_BYTES + 1], id[257];
    new_dir(dir, sizeof dir);
    this_host(host);
    put_claim(dir, "dead19", 3, 60000, (uint32_t)dead_pid(), HN_BF_CLAIM_COLLIDED, host);
    CU_ASSERT_EQUAL(run_job(dir, "dead19", 3, 1, job_deadline(3), 500), 0);
    CU_ASSERT(all_same_id("dead19", 3, 0, id));
    CU_ASSERT_EQUAL(count_files(dir, ""), 0);
}
