/* The core's side of a heal round (hidet_nccl_bootstrap_heal, _joining) through a version 4
 * plug-in written against the public header, whose heal answers what each case tells it: a
 * member's round after a recovery (the job's numbering kept across both rounds, the renumbering,
 * tags above every earlier round), a joiner (no collective before its round, the round's number
 * learned from the backend), answers that break the contract (refused; the handle then takes only
 * destroy), version 3 and half version 4 plug-ins; and hidet_nccl_comm_heal's and
 * hidet_nccl_comm_joined's checks that need no communicator. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tests/cunit_runner.h"

typedef enum { GOOD, JOINED_NOT_MEMBER, NOT_ME, ME_NOT_JOINED, SAME_EPOCH, FAIL, REFUSE } mode_t_;

static struct {
    mode_t_ mode;
    int joining;
    int rank, size;         /* what rank_size says */
    uint64_t last_tag;      /* of the last broadcast */
    uint64_t epoch_in;      /* what the last heal was given */
    uint64_t decided_epoch; /* what a joiner's heal answers */
    double last_wait, last_timeout;
    int dead, back;         /* the job rank recovery drops, and the one heal takes back in */
    int after;              /* a member's place after the heal */
} g;

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
/* Job rank g.dead died: the others go on, this rank one place lower when it was above it. */
static hidet_nccl_status_t p_recover(void *s, uint64_t epoch, double wait_s, double timeout_s, unsigned char *kept,
                                     char *m, size_t n) {
    (void)s, (void)epoch, (void)wait_s, (void)timeout_s, (void)m, (void)n;
    for (int r = 0; r < g.size; r++) kept[r] = r != g.dead;
    g.rank -= g.rank > g.dead;
    g.size -= 1;
    return HIDET_NCCL_SUCCESS;
}
static int p_joining(void *s) {
    (void)s;
    return g.joining;
}
/* A job of 4: every rank a member again, g.back taken in; this rank's place is its job rank
 * (given in g.rank by the case before the call when it is a member). */
static hidet_nccl_status_t p_heal(void *s, uint64_t *epoch, double wait_s, double timeout_s, unsigned char *members,
                                  unsigned char *joined, char *m, size_t n) {
    (void)s;
    g.epoch_in = *epoch;
    g.last_wait = wait_s;
    g.last_timeout = timeout_s;
    if (g.mode == FAIL) {
        snprintf(m, n, "job rank %d is alive: a second process for it is refused", g.back);
        return HIDET_NCCL_ERROR_BOOTSTRAP;
    }
    if (g.mode == REFUSE) {
        snprintf(m, n, "this rendezvous lives in rank 0: start the job with hidet-nccl-run to heal");
        return HIDET_NCCL_ERROR_UNSUPPORTED;
    }
    if (*epoch == 0) *epoch = g.decided_epoch;
    if (g.mode == SAME_EPOCH) *epoch = *epoch - 1;
    int me = g.joining ? g.rank : -1;
    for (int r = 0; r < 4; r++) {
        members[r] = 1;
        joined[r] = r == g.back;
    }
    if (g.mode == JOINED_NOT_MEMBER) members[g.back] = 0, joined[g.back] = 1;
    if (g.mode == NOT_ME && me >= 0) members[me] = joined[me] = 0;
    if (g.mode == NOT_ME && me < 0) members[2] = 0;
    if (g.mode == ME_NOT_JOINED) joined[g.back] = 0;
    g.size = 4;
    if (!g.joining) g.rank = g.after;
    return HIDET_NCCL_SUCCESS;
}

static const hidet_nccl_bootstrap_t k_v4 = {
    .name = "mine4",
    .api_version = HIDET_NCCL_BOOTSTRAP_API_VERSION,
    .init = p_init,
    .rank_size = p_rs,
    .local_rank = p_lr,
    .broadcast = p_bc,
    .allgather = p_ag,
    .finalize = p_fin,
    .recover = p_recover,
    .joining = p_joining,
    .heal = p_heal,
};

static hidet_nccl_bootstrap_h make(mode_t_ mode, int rank, int joining) {
    memset(&g, 0, sizeof g);
    g.mode = mode;
    g.rank = rank;
    g.size = 4;
    g.joining = joining;
    g.dead = g.back = 1;
    g.decided_epoch = 3;
    g.after = rank;
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&k_v4, NULL, &bs), HIDET_NCCL_SUCCESS, NULL);
    return bs;
}

/* Job rank 2 of 4: job rank 1 dies (recovery: 2 becomes 1 of 3), is restarted and taken back in
 * (heal: 2 of 4 again). */
static void test_member_after_recovery(void) {
    hidet_nccl_bootstrap_h bs = make(GOOD, 2, 0);
    int joining = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_joining(bs, &joining), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(joining, 0);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 10, NULL, NULL), HIDET_NCCL_SUCCESS, NULL);
    int rank = -1, size = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_rank(bs, &rank, &size), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(rank == 1 && size == 3);
    g.after = 2; /* the backend's place after the heal below */
    int members[4] = {-1, -1, -1, -1}, joined[4] = {-1, -1, -1, -1}, nm = -1, nj = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 8, members, joined, &nm, &nj), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.epoch_in, 2); /* recovery and heal rounds counted together */
    CU_ASSERT_DOUBLE_EQUAL(g.last_timeout, 8, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(g.last_wait, 4, 1e-9);
    CU_ASSERT(members[0] == 1 && members[1] == 1 && members[2] == 1 && members[3] == 1);
    CU_ASSERT(joined[0] == 0 && joined[1] == 1 && joined[2] == 0 && joined[3] == 0);
    CU_ASSERT(nm == 4 && nj == 1);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_rank(bs, &rank, &size), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT(rank == 2 && size == 4);
    char b[8] = "x";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 2ull << 32); /* above every earlier round */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

/* A restarted job rank 1: nothing but its heal round, whose number it learns. */
static void test_joiner(void) {
    hidet_nccl_bootstrap_h bs = make(GOOD, 1, 1);
    int joining = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_joining(bs, &joining), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(joining, 1);
    char b[8] = "x";
    unsigned char in[4] = {1, 2, 3, 4}, out[16];
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "restarted rank 1 of 4");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_allgather(bs, in, out, 4, 1), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "its first collective is the heal round");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 1, NULL, NULL), HIDET_NCCL_ERROR_INVALID_USAGE,
                     "not a recovery round");
    int id = -1;
    HN_ASSERT_STATUS(hidet_nccl_comm_heal(7, 1, &id, NULL), HIDET_NCCL_ERROR_INVALID_COMM, "communicator id 7");
    int joined[4] = {0}, nm = -1, nj = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 6, NULL, joined, &nm, &nj), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.epoch_in, 0); /* a joiner does not know the round's number */
    CU_ASSERT(joined[1] == 1 && nm == 4 && nj == 1);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_joining(bs, &joining), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(joining, 0);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 3ull << 32); /* the members' round 3 */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

/* Answers that break the contract, and a backend's refusal: an error naming it, then the handle
 * takes only destroy. */
static void test_bad_answers(void) {
    static const struct {
        mode_t_ mode;
        int joining;
        hidet_nccl_status_t st;
        const char *says;
    } cases[] = {
        {JOINED_NOT_MEMBER, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "said job rank 1 joined but is not a member"},
        {NOT_ME, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "said success to job rank 2 (a member)"},
        {NOT_ME, 1, HIDET_NCCL_ERROR_BOOTSTRAP, "said success to job rank 1 (a joiner)"},
        {ME_NOT_JOINED, 1, HIDET_NCCL_ERROR_BOOTSTRAP, "joiners none"},
        {SAME_EPOCH, 0, HIDET_NCCL_ERROR_BOOTSTRAP, "said round 0 after 0"},
        {FAIL, 1, HIDET_NCCL_ERROR_BOOTSTRAP, "job rank 1 is alive: a second process for it is refused"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        hidet_nccl_bootstrap_h bs = make(cases[i].mode, cases[i].joining ? 1 : 2, cases[i].joining);
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 2, NULL, NULL, NULL, NULL), cases[i].st, cases[i].says);
        char b[8] = "x";
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_ERROR_BOOTSTRAP,
                         "is out of use since its heal round failed");
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 2, NULL, NULL, NULL, NULL), HIDET_NCCL_ERROR_BOOTSTRAP,
                         "is out of use");
        HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    }
}

/* A backend that refuses at once (it cannot heal as it was started) leaves the handle as it was. */
static void test_refused_at_once(void) {
    hidet_nccl_bootstrap_h bs = make(REFUSE, 2, 0);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 2, NULL, NULL, NULL, NULL), HIDET_NCCL_ERROR_UNSUPPORTED,
                     "start the job with hidet-nccl-run to heal");
    char b[8] = "x";
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_broadcast(bs, b, 8, 0, 1), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(g.last_tag, 0); /* no round counted */
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_recover(bs, 2, NULL, NULL), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
}

/* A version 3 plug-in cannot heal and says why; a version 4 one with half the pair is refused. */
static void test_versions(void) {
    memset(&g, 0, sizeof g);
    g.size = 2;
    hidet_nccl_bootstrap_v3_t v3 = {"mine3", HIDET_NCCL_BOOTSTRAP_API_VERSION_V3, p_init, p_rs, p_lr, p_bc, p_ag,
                                    p_fin, p_recover, NULL, NULL};
    hidet_nccl_bootstrap_h bs = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create((const hidet_nccl_bootstrap_t *)(const void *)&v3, NULL, &bs),
                     HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(bs, 1, NULL, NULL, NULL, NULL), HIDET_NCCL_ERROR_UNSUPPORTED,
                     "it is a version 3 plug-in (healing came with version 4)");
    int joining = -1;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_joining(bs, &joining), HIDET_NCCL_SUCCESS, NULL);
    CU_ASSERT_EQUAL(joining, 0);
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_destroy(bs), HIDET_NCCL_SUCCESS, NULL);
    hidet_nccl_bootstrap_t half = k_v4;
    half.heal = NULL;
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_create(&half, NULL, &bs), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "has joining but not heal");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_joining(NULL, &joining), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "bs");
    HN_ASSERT_STATUS(hidet_nccl_bootstrap_heal(NULL, 1, NULL, NULL, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                     "bs");
}

/* comm_heal and comm_joined refuse what they can tell without a communicator. */
static void test_comm_checks(void) {
    int id = 5, n = 5;
    HN_ASSERT_STATUS(hidet_nccl_comm_heal(0, 1, NULL, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "new_id");
    HN_ASSERT_STATUS(hidet_nccl_comm_heal(-1, 1, &id, &n), HIDET_NCCL_ERROR_INVALID_COMM, "id -1 is negative");
    CU_ASSERT(id == -1 && n == 0);
    HN_ASSERT_STATUS(hidet_nccl_comm_heal(0, -1, &id, NULL), HIDET_NCCL_ERROR_INVALID_ARGUMENT, "timeout_s");
    HN_ASSERT_STATUS(hidet_nccl_group_start(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_heal(0, 1, &id, NULL), HIDET_NCCL_ERROR_INVALID_USAGE, "inside a group");
    HN_ASSERT_STATUS(hidet_nccl_group_end(), HIDET_NCCL_SUCCESS, NULL);
    HN_ASSERT_STATUS(hidet_nccl_comm_joined(3, NULL, &n), HIDET_NCCL_ERROR_INVALID_COMM, "communicator id 3");
}

int main(void) {
    static const hn_test_t tests[] = {
        {"a member's round after a recovery", test_member_after_recovery},
        {"a restarted rank joins", test_joiner},
        {"answers that break the contract", test_bad_answers},
        {"a backend that refuses at once leaves the handle as it was", test_refused_at_once},
        {"versions", test_versions},
        {"comm_heal and comm_joined checks", test_comm_checks},
        {NULL, NULL},
    };
    return hn_run_tests("bootstrap_heal", tests);
}
