/* The core's side of a recovery round (hidet_nccl_bootstrap_recover) through a version 3
 * plug-in written against the public header, whose recover does what each case tells it:
 * a good round (the set back, the renumbering, tags above every earlier round), a backend that
 * names a set without this rank or does not renumber (refused; the handle then takes only
 * destroy), two threads at once (one refused at once), bad deadlines; version 2 and 1
 * plug-ins cannot recover and say so (version 1: bootstrap_plugin_v1_test); and hidet_nccl_comm_recover's checks that need no
 * communicator (arguments, an id never given). */
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"
#include "tests/deadline.h"

typedef enum { GOOD, NOT_ME, NO_RENUMBER, HELD, FAIL } mode_t_;

static struct {
    mode_t_ mode;
    int rank, size;      /* what rank_size says */
    uint64_t last_tag;   /* of the last broadcast */
    uint64_t last_epoch; /* of the last recover */
    double last_wait, last_timeout;
} g;
/* HELD: the round says it is in (g_in_round) and stays until the test lets it go (g_release). */
static atomic_int g_in_round, g_release;

static hidet_nccl_status_t p_init(const void *p, const hidet_nccl_bootstrap_init_args_t *a, void **s, char *m,
                                  size_t n) {
    (void)p, (void)a, (void)m, (void)n;
    *s = NULL;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t p_rs(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = g.rank;
    *z = g.size;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t p_lr(void *s, int *r, int *z, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    *r = *z = -1;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t p_bc(void *s, void *b, size_t k, int root, uint64_t t, double to, char *m, size_t n) {
    (void)s, (void)b, (void)k, (void)root, (void)to, (void)m, (void)n;
    g.last_tag = t;
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t p_ag(void *s, const void *in, void *out, size_t k, uint64_t t, double to, char *m,
                                size_t n) {
    (void)s, (void)t, (void)to, (void)m, (void)n;
    memmove(out, in, k);
    return HIDET_NCCL_SUCCESS;
}
static hidet_nccl_status_t p_fin(void *s, char *m, size_t n) {
    (void)s, (void)m, (void)n;
    return HIDET_NCCL_SUCCESS;
}
/* This is rank 2 of 4; rank 1 died: the set {0, 2, 3}, this rank becomes 1 of 3. */
static hidet_nccl_status_t p_recover(void *s, uint64_t epoch, double wait_s, double timeout_s, unsigned char *kept,
                                     char *m, size_t n) {
    (void)s;
    g.last_epoch = epoch;
    g.last_wait = wait_s;
    g.last_timeout = timeout_s;
    if (g.mode == HELD) {
        atomic_store(&g_in_round, 1);
        int released = 0;
        HN_WAIT_FOR(released, atomic_load(&g_release), 60, "the test's release of the round");
        (void)released; /* not released: the round ends, and the case fails on what it then sees */
    }
    if (g.mode == FAIL) {
        snprintf(m, n, "left out of recovery round %llu: ranks 0 1 went on without rank %d",
                 (unsigned long long)epoch, g.rank);
        return HIDET_NCCL_ERROR_BOOTSTRAP;
    }
    for (int r = 0; r < g.size; r++) kept[r] = r != 1;
    if (g.mode == NOT_ME) kept[g.rank] = 0;
    if (g.mode != NO_RENUMBER) {
        g.rank = 1;
        g.size = 3;
    }
    return HIDET_NCCL_SUCCESS;
}

static const hidet_nccl_bootstrap_t k_v3 = {
    .name = "mine3",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = p_init,
    .rank_size = p_rs,
    .local_rank = p_lr,
    .broadcast = p_bc,
    .allgather = p_ag,
    .finalize = p_fin,
    .recover = p_recover,
};

static hidet_nccl_bootstrap_h make(mode_t_ mode) {
    memset(&g, 0, sizeof g);
    g.mode = mode;
    g.rank = 2;
    g.size = 4;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_v3, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    return bs;
}

static void test_good_round(void) {
    hidet_nccl_bootstrap_h bs = make(GOOD);
    char b[8] = "x";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 0);
    int kept[4] = {-1, -1, -1, -1}, n_kept = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, kept, &n_kept), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(kept[0] == 1 && kept[1] == 0 && kept[2] == 1 && kept[3] == 1);
    CU_ASSERT_EQUAL(n_kept, 3);
    CU_ASSERT_EQUAL(g.last_epoch, 1);
    CU_ASSERT_DOUBLE_EQUAL(g.last_timeout, 10, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(g.last_wait, 5, 1e-9); /* the decider waits half the deadline for stragglers */
    int rank = -1, size = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_rank(bs, &rank, &size), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(rank == 1 && size == 3);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 1ull << 32); /* above every earlier round */
    /* The next round is epoch 2 (the plug-in plays the same death again from rank 2 of 4). */
    g.rank = 2;
    g.size = 4;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 0, NULL, NULL), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_epoch, 2);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 2ull << 32);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

/* A backend that names a set without this rank, or does not renumber: refused, and the handle
 * is out of use (every call says why) but can be destroyed. */
static void test_lying_backends(void) {
    hidet_nccl_bootstrap_h bs = make(NOT_ME);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "named ranks 0 3 without it");
    char b[8];
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_ERROR_BOOTSTRAP, "out of use");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, b, b, 1, 1), HIDET_NCCL_ERROR_BOOTSTRAP, "destroy it");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_ERROR_BOOTSTRAP, "out of use");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    bs = make(NO_RENUMBER);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "(old rank 2 goes on as 1 of 3), but the backend says rank 2 of 4");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    bs = make(FAIL); /* the backend's own words, and how long it took */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_ERROR_BOOTSTRAP,
                     "left out of recovery round 1: ranks 0 1 went on without rank 2");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_ERROR_BOOTSTRAP, "round 1 failed");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

typedef struct {
    hidet_nccl_bootstrap_h bs;
    hidet_nccl_status_t st;
    char msg[512];
} call_t;

static void *recover_thread(void *p) {
    call_t *c = p;
    c->st = hidet_nccl_bootstrap_recover(c->bs, 10, NULL, NULL);
    snprintf(c->msg, sizeof c->msg, "%s", c->st ? hidet_nccl_last_error() : "");
    return NULL;
}

static void test_two_threads(void) {
    hidet_nccl_bootstrap_h bs = make(HELD);
    atomic_store(&g_in_round, 0);
    atomic_store(&g_release, 0);
    call_t a = {bs, 0, ""}, b = {bs, 0, ""};
    pthread_t ta, tb;
    pthread_create(&ta, NULL, recover_thread, &a);
    int in = 0;
    HN_WAIT_FOR(in, atomic_load(&g_in_round), 60, "the first thread in the round");
    CU_ASSERT(in);
    pthread_create(&tb, NULL, recover_thread, &b);
    pthread_join(tb, NULL); /* refused at once, while the first is still in the round */
    CU_ASSERT_EQUAL(b.st, HIDET_NCCL_ERROR_INVALID_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(b.msg, "under way on another thread"));
    atomic_store(&g_release, 1);
    pthread_join(ta, NULL);
    CU_ASSERT_EQUAL(a.st, HIDET_NCCL_SUCCESS);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

static void test_bad_arguments(void) {
    hidet_nccl_bootstrap_h bs = make(GOOD);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(NULL, 10, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bs");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, NAN, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, -1, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, INFINITY, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "timeout_s");
    CU_ASSERT_EQUAL(g.last_epoch, 0); /* nothing reached the backend */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    int id = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(0, 10, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "new_id");
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(0, NAN, &id, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(-3, 10, &id, NULL), HIDET_NCCL_ERROR_INVALID_COMM, "negative");
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(7, 10, &id, NULL), HIDET_NCCL_ERROR_INVALID_COMM, "never given");
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_recover(0, 10, &id, NULL), HIDET_NCCL_ERROR_INVALID_USAGE, "inside a group");
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(id, -1);
}

/* Older plug-ins have no round: refused at once with the reason, and still usable. */
static void test_older_plugins(void) {
    const hidet_nccl_bootstrap_v2_t v2 = {"mine2", HIDET_NCCL_BOOTSTRAP_API_VERSION_V2, p_init, p_rs, p_lr,
                                          p_bc,    p_ag,                                 p_fin};
    g.rank = 0;
    g.size = 2;
    for (int way = 0; way < 2; way++) { /* create_v2, and create given a struct that says version 2 */
        hidet_nccl_bootstrap_h bs = NULL;
        HN_ASSERT_STATUS(way ? hidet_nccl_bootstrap_create((const hidet_nccl_bootstrap_t *)(const void *)&v2, NULL, &bs)
                             : hidet_nccl_bootstrap_create_v2(&v2, NULL, &bs),
                         HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_ERROR_UNSUPPORTED,
                         "bootstrap 'mine2' cannot recover after a rank died: it is a version 2 plug-in");
        char b[4] = "";
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 4, 0, 1), HIDET_NCCL_SUCCESS, NULL);
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    }
    const hidet_nccl_bootstrap_v2_t bad = {"bad", HIDET_NCCL_BOOTSTRAP_API_VERSION_V2, p_init, p_rs, p_lr, p_bc, NULL,
                                           p_fin};
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create_v2(&bad, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "has no allgather");
}

int main(void) {
    static const hn_test_t tests[] = {
        {"a good round: the set, the renumbering, the tags", test_good_round},
        {"a backend that lies is refused; the handle is out of use", test_lying_backends},
        {"two threads at once: one refused at once", test_two_threads},
        {"bad arguments refused before the backend", test_bad_arguments},
        {"version 2 plug-ins cannot recover, and say so", test_older_plugins},
        {NULL, NULL},
    };
    return hn_run_tests("bootstrap_recover", tests);
}
