/* The shared-file bootstrap's recovery round against files that are not this round's, with real
 * processes (tests/file_ranks.h): decisions of another round, world or job are never taken
 * (every rank fails at once, naming the file and why), nor mistaken for this job's next round;
 * corrupt and foreign joins are refused with a message, and the round goes on without a rank
 * that died; nothing is left in the directory. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "bootstrap_file/file_format_int.h"
#include "core/base/kit.h"
#include "tests/cunit_runner.h"
#include "tests/file_ranks.h"

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
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "foreign%zu", i);
        const char *secret = i == 3 ? "secret-of-this-job-0123456" : i == 2 ? "secret-of-this-job-0123456" : NULL;
        size_t len = hn_fr_make_decision(file, sizeof file, key, bad[i].epoch, 1, bad[i].world, 0, "111", bad[i].secret_of_file);
        hn_fr_recovery_path(dir, key, 1, -1, path, sizeof path);
        hn_fr_put_file(path, file, len);
        hn_fr_rank_t r0 = hn_fr_start(dir, key, key, secret, 0, 2, "a r20");
        hn_fr_rank_t r1 = hn_fr_start(dir, key, key, secret, 1, 2, "a r20");
        hn_fr_finish(&r0);
        hn_fr_finish(&r1);
        hn_fr_recovered_t a, b;
        CU_ASSERT_FATAL(hn_fr_recovered(key, 0, 0, &a) && hn_fr_recovered(key, 1, 0, &b));
        printf("\n    %s: %d (%.3f s): %.400s", bad[i].name, a.st, a.took, a.msg);
        CU_ASSERT(a.st == HIDET_NCCL_ERROR_BOOTSTRAP && b.st == HIDET_NCCL_ERROR_BOOTSTRAP);
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg, bad[i].expect));
        CU_ASSERT_PTR_NOT_NULL(strstr(a.msg, "refused"));
        CU_ASSERT(a.took < 2 && b.took < 2);
        unlink(path);
        CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
    }
    /* Beside this round's: the next round's decision of another job with this key, and this
     * round's decision of another key. */
    char dir[PATH_MAX], path[PATH_MAX + 64], other[PATH_MAX + 64];
    hn_fr_new_dir(dir, sizeof dir);
    const char *secret = "secret-of-this-job-0123456";
    size_t len = hn_fr_make_decision(file, sizeof file, "fine", 2, 2, 2, 0, "11", "secret-of-another-job-0123");
    hn_fr_recovery_path(dir, "fine", 2, -1, path, sizeof path);
    hn_fr_put_file(path, file, len);
    len = hn_fr_make_decision(file, sizeof file, "fine.x", 1, 1, 2, 0, "10", secret);
    hn_fr_recovery_path(dir, "fine.x", 1, -1, other, sizeof other);
    hn_fr_put_file(other, file, len);
    hn_fr_rank_t r0 = hn_fr_start(dir, "fine", "fine", secret, 0, 2, "a r20 a");
    hn_fr_rank_t r1 = hn_fr_start(dir, "fine", "fine", secret, 1, 2, "a r20 a");
    hn_fr_finish(&r0);
    hn_fr_finish(&r1);
    hn_fr_recovered_t a, b;
    CU_ASSERT_FATAL(hn_fr_recovered("fine", 0, 0, &a) && hn_fr_recovered("fine", 1, 0, &b));
    printf("\n    beside others' decisions: %d, %d (%.3f s) %.200s", a.st, b.st, a.took, a.msg);
    CU_ASSERT(a.st == 0 && b.st == 0 && strcmp(a.kept, "11") == 0 && strcmp(b.kept, "11") == 0);
    double took;
    CU_ASSERT_EQUAL(hn_fr_allgathered("fine", 1, 1, &took, NULL, 0), 0);
    /* what is not this job's stays (the next round's is another job's: a sweep removes only
     * earlier rounds) */
    CU_ASSERT_EQUAL(access(path, F_OK), 0);
    CU_ASSERT_EQUAL(access(other, F_OK), 0);
    unlink(path);
    unlink(other);
    CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
}

/* A corrupt join, and one of another job (its MAC), at the place of a rank that died: refused,
 * with a warning that names the file and why, and the round goes on without that rank at once
 * (it is known dead); at the place of a rank that joins: replaced by its own. */
static void test_corrupt_and_foreign_joins(void) {
    const char *secret = "secret-of-this-job-0123456";
    for (int foreign = 0; foreign < 2; foreign++) {
        char dir[PATH_MAX], key[32], path[PATH_MAX + 64], err[8192];
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "badjoin%d", foreign);
        hn_fr_rank_t r0 = hn_fr_start(dir, key, key, secret, 0, 3, "a w r20 a");
        hn_fr_rank_t r1 = hn_fr_start(dir, key, key, secret, 1, 3, "a w r20 a");
        hn_fr_rank_t r2 = hn_fr_start(dir, key, key, secret, 2, 3, "a w");
        hn_fr_go(&r2);
        hn_fr_finish(&r2); /* rank 2 ends (gone), after the allgather that showed its process */
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
        hn_fr_recovery_path(dir, key, 1, 2, path, sizeof path);
        hn_fr_put_file(path, file, len);
        /* and a corrupt join at rank 1's place: rank 1 replaces it with its own */
        char mine[PATH_MAX + 64];
        hn_fr_recovery_path(dir, key, 1, 1, mine, sizeof mine);
        hn_fr_put_file(mine, (const uint8_t *)"garbage", 7);
        hn_fr_go(&r0);
        hn_fr_go(&r1);
        hn_fr_finish(&r0);
        hn_fr_finish(&r1);
        hn_fr_recovered_t a, b;
        CU_ASSERT_FATAL(hn_fr_recovered(key, 0, 0, &a) && hn_fr_recovered(key, 1, 0, &b));
        hn_fr_err_of(key, 0, err, sizeof err);
        printf("\n    %s join of a dead rank: %d, %d (%.3f s); rank 0 warned: %.300s", foreign ? "a foreign" : "a corrupt",
               a.st, b.st, a.took, err);
        CU_ASSERT(a.st == 0 && b.st == 0 && strcmp(a.kept, "110") == 0 && strcmp(b.kept, "110") == 0);
        CU_ASSERT(a.took < 2); /* not wait_s (10 s): rank 2 is known gone */
        CU_ASSERT_PTR_NOT_NULL(strstr(err, ".join.2"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, foreign ? "does not match this job's secret" : "checksum"));
        CU_ASSERT_PTR_NOT_NULL(strstr(err, "refused"));
        double took;
        CU_ASSERT_EQUAL(hn_fr_allgathered(key, 0, 1, &took, NULL, 0), 0);
        CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0); /* rank 0's end removed the round's names, the refused one too */
    }
}

int main(void) {
    if (hn_fr_begin("file_recover_hostile") != 0) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    static const hn_test_t tests[] = {
        {"decisions of another round or job are never taken", test_foreign_decisions},
        {"corrupt and foreign joins refused with a message", test_corrupt_and_foreign_joins},
        {NULL, NULL},
    };
    return hn_run_tests("file_recover_hostile", tests);
}
