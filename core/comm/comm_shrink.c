/* hidet_nccl_comm_shrink: a new owned communicator of the ranks that stay (ncclCommShrink,
 * NCCL 2.27), from a healthy communicator or from one that failed. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/blocking_call_int.h"
#include "core/comm/comm_init_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

#define SHRINK_VERSION 22700

typedef struct {
    const hn_nccl_t *n;
    ncclComm_t parent, child;
    int *exclude;
    int n_exclude, flags, blocking, rank;
    hn_knobs_t knobs; /* the parent's, kept in the job: the helper may outlive the caller */
} shrink_job_t;

/* NCCL 2.28.9 refuses a shrink that excludes nobody (invalid argument): that one is a split of
 * every rank in one color, in the same order. */
static ncclResult_t run_shrink(void *p) {
    shrink_job_t *a = p;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = a->blocking;
    hidet_nccl__knobs_apply(&a->knobs, &config);
    if (a->n_exclude == 0 && a->n->CommSplit != NULL) return a->n->CommSplit(a->parent, 0, a->rank, &a->child, &config);
    return a->n->CommShrink(a->parent, a->exclude, a->n_exclude, &a->child, &config, a->flags);
}

static void late_shrink(void *p, ncclResult_t r) {
    shrink_job_t *a = p;
    (void)r;
    if (a->child != NULL) a->n->CommAbort(a->child);
}

/* exclude_ranks: ranks of the communicator, each once, not this rank. */
static hidet_nccl_status_t check_excluded(int comm_id, int nranks, int rank, int n_exclude, const int *exclude) {
    if (n_exclude < 0 || n_exclude >= nranks)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "n_exclude %d is not in 0 .. %d (communicator id %d has %d ranks, and this one stays)",
                       n_exclude, nranks - 1, comm_id, nranks);
    if (n_exclude > 0 && exclude == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "exclude_ranks is NULL with n_exclude %d", n_exclude);
    for (int i = 0; i < n_exclude; i++) {
        if (exclude[i] < 0 || exclude[i] >= nranks)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "exclude_ranks[%d] = %d is not a rank of communicator id %d (0 .. %d)", i, exclude[i],
                           comm_id, nranks - 1);
        if (exclude[i] == rank)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                           "exclude_ranks[%d] = %d is this rank: an excluded rank does not call comm_shrink", i, rank);
        for (int j = 0; j < i; j++)
            if (exclude[j] == exclude[i])
                return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "exclude_ranks[%d] and [%d] are both rank %d", j, i,
                               exclude[i]);
    }
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_comm_shrink(int comm_id, int n_exclude, const int *exclude_ranks, int flags,
                                           int *new_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(new_id);
    if (flags != HIDET_NCCL_SHRINK_DEFAULT && flags != HIDET_NCCL_SHRINK_ABORT)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "flags %d is not HIDET_NCCL_SHRINK_DEFAULT (0) or HIDET_NCCL_SHRINK_ABORT (1)", flags);
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "comm_shrink is not taken inside a group (call it after "
                                                       "hidet_nccl_group_end)");
    hn_slot_t slot;
    HN_CHECK(hidet_nccl__registry_get(comm_id, 1, &slot));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded();
    HN_CHECK(hidet_nccl__needs(n, (const void *)n->CommShrink, SHRINK_VERSION, "comm_shrink", "ncclCommShrink"));
    /* Known for an owned communicator; a failed one no longer answers NCCL's queries. */
    int nranks = slot.nranks, rank = slot.rank;
    ncclResult_t r = nranks > 0 ? ncclSuccess : n->CommCount(slot.comm, &nranks);
    if (r == ncclSuccess && rank < 0) r = n->CommUserRank(slot.comm, &rank);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclCommCount/ncclCommUserRank", r, slot.comm);
    HN_CHECK(check_excluded(comm_id, nranks, rank, n_exclude, exclude_ranks));
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    int blocking;
    HN_CHECK(hidet_nccl__want_blocking(&blocking));
    uint32_t key;
    HN_CHECK(hidet_nccl__registry_child_key(comm_id, "shrink", n_exclude, &key));

    char what[160];
    snprintf(what, sizeof what, "ncclCommShrink of communicator id %d (%d of %d ranks excluded%s)", comm_id, n_exclude,
             nranks, flags == HIDET_NCCL_SHRINK_ABORT ? ", NCCL_SHRINK_ABORT" : "");
    /* NCCL takes a non-const list, and refuses a NULL one even when it is empty */
    int *exclude = malloc((size_t)(n_exclude > 0 ? n_exclude : 1) * sizeof *exclude);
    if (exclude == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks", n_exclude);
    if (n_exclude > 0) memcpy(exclude, exclude_ranks, (size_t)n_exclude * sizeof *exclude);
    int nccl_flags = flags == HIDET_NCCL_SHRINK_ABORT ? NCCL_SHRINK_ABORT : NCCL_SHRINK_DEFAULT;
    shrink_job_t job = {n, slot.comm, NULL, exclude, n_exclude, nccl_flags, blocking, rank, {0}};
    hidet_nccl__registry_knobs(comm_id, &job.knobs);
    hidet_nccl_status_t st;
    if (blocking) {
        int device;
        st = hidet_nccl__current_device(&device);
        if (st == HIDET_NCCL_SUCCESS)
            st = hidet_nccl__blocking_call(&(hn_blocking_call_t){run_shrink, late_shrink}, &job, sizeof job, device,
                                           timeout, what, &r);
        if (st == HIDET_NCCL_ERROR_TIMEOUT) {
            /* The helper still uses the list and the parent: both are left to it. */
            hidet_nccl__append_error("communicator id %d is still inside that shrink: destroy it only after the "
                                     "process is done with NCCL (finalize aborts it)", comm_id);
            return st;
        }
    } else {
        r = run_shrink(&job);
        st = HIDET_NCCL_SUCCESS;
    }
    free(exclude);
    if (st != HIDET_NCCL_SUCCESS) return st;
    if (r != ncclSuccess && r != ncclInProgress) {
        st = hidet_nccl__nccl_fail(__func__, what, r, slot.comm);
        if (job.child != NULL) n->CommAbort(job.child);
        return st;
    }
    if (!blocking && job.child != NULL) HN_CHECK(hidet_nccl__await(n, &job.child, 1, timeout, 1, what));
    if (job.child == NULL) return HN_FAIL(HIDET_NCCL_ERROR_NCCL, "%s gave no communicator", what);
    return hidet_nccl__registry_add_child(n, job.child, key, &job.knobs, new_id);
}
