/* Two processes started as one rank of a shared-file bootstrap job (issue 38, item 7), with real
 * processes (tests/file_ranks.h): a root and two processes as rank 1, one key, one directory.
 * Each process that met the other fails: the one made second at once (the first one's presence),
 * the first at its next call (its presence is gone), or both in the round (two answers to one
 * claim); neither is ever accepted silently, and nothing (a collided claim among them) stays once
 * all ended. */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"
#include "tests/file_ranks.h"

/* Whether the process labelled `label` as rank 1 succeeded (its allgather and its end), and, if
 * not, whether its message says it met another process as its rank. */
static int succeeded(const char *label, int *met_other, char *msg, size_t n) {
    char line[8192];
    double took;
    int ok = hn_fr_allgathered(label, 1, 0, &took, msg, n) == 0;
    hn_fr_line_of(label, 1, "destroy", 0, line, sizeof line);
    ok = ok && strncmp(line, "destroy 0", 9) == 0; /* its end looks once more */
    if (!ok && msg[0] == '\0') {
        hn_fr_line_of(label, 1, "init", 0, line, sizeof line);
        if (!line[0]) hn_fr_line_of(label, 1, "destroy", 0, line, sizeof line);
        snprintf(msg, n, "%s", line);
    }
    *met_other = !ok && (strstr(msg, "two processes") != NULL || strstr(msg, "another live process") != NULL ||
                         strstr(msg, "presence") != NULL);
    return ok;
}

/* Started together, many times: never both accepted, and whenever one of them failed for meeting
 * the other, the other failed too (a process started as rank 1 after the first one's whole job
 * ended meets nobody: it waits for a root that is gone, and the first one's success stands). */
static void test_started_together(void) {
    int runs = 50, both_ok = 0, one_told = 0, root_ok = 0, left = 0, met = 0;
    char sample[4096] = "";
    for (int i = 0; i < runs; i++) {
        char dir[PATH_MAX], key[32], la[32], lb[32], ma[4096] = "", mb[4096] = "";
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "dup%d", i);
        snprintf(la, sizeof la, "dupA%d", i);
        snprintf(lb, sizeof lb, "dupB%d", i);
        hn_fr_rank_t a = hn_fr_start(dir, key, la, NULL, 1, 2, "a2");
        hn_fr_rank_t b = hn_fr_start(dir, key, lb, NULL, 1, 2, "a2");
        hn_fr_rank_t r = hn_fr_start(dir, key, key, NULL, 0, 2, "a2");
        hn_fr_finish(&a);
        hn_fr_finish(&b);
        hn_fr_finish(&r);
        int met_a, met_b, ok_a = succeeded(la, &met_a, ma, sizeof ma), ok_b = succeeded(lb, &met_b, mb, sizeof mb);
        both_ok += ok_a && ok_b;
        one_told += (met_a && ok_b) || (met_b && ok_a);
        met += met_a || met_b;
        if ((met_a || met_b) && !sample[0]) snprintf(sample, sizeof sample, "%s", met_a ? ma : mb);
        double took;
        root_ok += hn_fr_allgathered(key, 0, 0, &took, NULL, 0) == 0;
        left += hn_fr_count_files(dir, "") > 0;
    }
    printf("\n    %d runs: the two met in %d, one told while the other succeeded in %d, both succeeded in %d; the "
           "root succeeded in %d; files left in %d; a message: %.400s", runs, met, one_told, both_ok, root_ok, left,
           sample);
    CU_ASSERT_EQUAL(both_ok, 0);
    CU_ASSERT_EQUAL(one_told, 0);
    CU_ASSERT_EQUAL(left, 0);
}

/* The second made while the first waits in its bootstrap: the second fails at once naming the
 * first, the first at its call, the root at its deadline; nothing stays. */
static void test_second_while_first_waits(void) {
    for (int i = 0; i < 3; i++) {
        char dir[PATH_MAX], key[32], la[32], lb[32], presence[PATH_MAX + 64], ma[4096] = "", mb[4096] = "";
        hn_fr_new_dir(dir, sizeof dir);
        snprintf(key, sizeof key, "second%d", i);
        snprintf(la, sizeof la, "secondA%d", i);
        snprintf(lb, sizeof lb, "secondB%d", i);
        snprintf(presence, sizeof presence, "%s/hidet-nccl.%s.0.join.1", dir, key);
        hn_fr_rank_t a = hn_fr_start(dir, key, la, NULL, 1, 2, "w a2");
        CU_ASSERT_FATAL(hn_fr_wait_for(presence, 20));
        hn_fr_rank_t b = hn_fr_start(dir, key, lb, NULL, 1, 2, "w a2");
        hn_fr_rank_t r = hn_fr_start(dir, key, key, NULL, 0, 2, "a2");
        hn_fr_finish(&b); /* its bootstrap refused: it ends without waiting */
        hn_fr_go(&a);
        hn_fr_finish(&a);
        hn_fr_finish(&r);
        int met_a, met_b, ok_a = succeeded(la, &met_a, ma, sizeof ma), ok_b = succeeded(lb, &met_b, mb, sizeof mb);
        double took;
        char msg[4096] = "";
        int root = hn_fr_allgathered(key, 0, 0, &took, msg, sizeof msg);
        if (i == 0)
            printf("\n    the second: %.300s\n    the first: %.300s\n    the root: %d after %.1f s", mb, ma, root, took);
        CU_ASSERT(!ok_a && !ok_b && met_a && met_b);
        CU_ASSERT_PTR_NOT_NULL(strstr(mb, "two processes were started as rank 1"));
        CU_ASSERT_PTR_NOT_NULL(strstr(ma, "presence"));
        CU_ASSERT_NOT_EQUAL(root, 0);
        CU_ASSERT_EQUAL(hn_fr_count_files(dir, ""), 0);
    }
}

int main(void) {
    if (hn_fr_begin("file_duplicate_rank") != 0) return 1;
    setvbuf(stdout, NULL, _IONBF, 0);
    signal(SIGPIPE, SIG_IGN);
    static const hn_test_t tests[] = {
        {"two processes as rank 1 started together: never accepted silently", test_started_together},
        {"the second made while the first waits: both fail", test_second_while_first_waits},
        {NULL, NULL},
    };
    return hn_run_tests("file_duplicate_rank", tests);
}
