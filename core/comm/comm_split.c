/* hidet_nccl_comm_split: a new owned communicator from a color and key (NCCL 2.18+). */
#include <stdio.h>
#include <stdlib.h>

#include "core/comm/blocking_call_int.h"
#include "core/nccl/cuda_int.h"
#include "core/comm/comm_init_int.h"
#include "core/comm/comm_split_int.h"
#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

/* A blocking split, run by hidet_nccl__blocking_call on its helper thread. */
typedef struct {
    const hn_nccl_t *n;
    ncclComm_t parent, child;
    int color, key, share;
    hn_knobs_t knobs; /* the parent's, kept in the job: the helper may outlive the caller */
} split_job_t;

static ncclResult_t run_split(void *p) {
    split_job_t *a = p;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    hidet_nccl__knobs_apply(&a->knobs, &config);
    if (a->share != HIDET_NCCL_UNSET) config.splitShare = a->share;
    return a->n->CommSplit(a->parent, a->color, a->key, &a->child, &config);
}

static void late_split(void *p, ncclResult_t r) {
    split_job_t *a = p;
    (void)r;
    if (a->child != NULL) a->n->CommAbort(a->child);
}

/* Blocking mode outside a group: a blocking child, made on a helper thread against the
 * deadline. At the deadline the parent is still inside NCCL's split: its id is made dead
 * (neither usable nor destroyable) and it is left to the process exit. */
static hidet_nccl_status_t split_blocking(const hn_nccl_t *n, int comm_id, ncclComm_t parent, int color, int key,
                                          int share, const hn_knobs_t *knobs, uint32_t trace_key, double timeout,
                                          const char *what, int *new_id) {
    split_job_t job = {n, parent, NULL, color, key, share, *knobs};
    ncclResult_t r;
    int device;
    HN_CHECK(hidet_nccl__current_device(&device));
    hidet_nccl_status_t st = hidet_nccl__blocking_call(&(hn_blocking_call_t){run_split, late_split}, &job, sizeof job,
                                                       device, timeout, what, &r);
    if (st == HIDET_NCCL_ERROR_TIMEOUT) {
        hidet_nccl__registry_kill_stuck(comm_id, "an ncclCommSplit");
        return HIDET_NCCL_ERROR_TIMEOUT;
    }
    if (st != HIDET_NCCL_SUCCESS) return st;
    if (r != ncclSuccess) {
        st = hidet_nccl__nccl_fail("hidet_nccl_comm_split", what, r, parent);
        if (job.child != NULL) n->CommAbort(job.child);
        return st;
    }
    if (job.child == NULL) { /* NOCOLOR */
        *new_id = -1;
        return HIDET_NCCL_SUCCESS;
    }
    return hidet_nccl__registry_add_child(n, job.child, trace_key, knobs, new_id);
}

hidet_nccl_status_t hidet_nccl_comm_split(int comm_id, int color, int key, int *new_id) {
    HN_ENTER();
    return hidet_nccl__comm_split(comm_id, color, key, HIDET_NCCL_UNSET, new_id);
}

hidet_nccl_status_t hidet_nccl__comm_split(int comm_id, int color, int key, int share, int *new_id) {
    HN_CHECK_NOT_NULL(new_id);
    if (color < 0 && color != HIDET_NCCL_SPLIT_NOCOLOR)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "color %d is negative and not HIDET_NCCL_SPLIT_NOCOLOR (%d)", color, HIDET_NCCL_SPLIT_NOCOLOR);
    ncclComm_t parent;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &parent, NULL, NULL));
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    if (n->CommSplit == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                       "comm_split needs NCCL 2.18 or newer (ncclCommSplit); the loaded NCCL is %d.%d.%d (%s)",
                       hidet_nccl__version_major(n->version), hidet_nccl__version_minor(n->version),
                       hidet_nccl__version_patch(n->version), n->path);
    char what[128];
    snprintf(what, sizeof what, "ncclCommSplit of communicator id %d (color %d, key %d)", comm_id, color, key);
    int blocking;
    HN_CHECK(hidet_nccl__want_blocking(&blocking));
    uint32_t trace_key;
    HN_CHECK(hidet_nccl__registry_child_key(comm_id, "split", color, &trace_key));
    hn_knobs_t knobs;
    hidet_nccl__registry_knobs(comm_id, &knobs);
    if (blocking && hidet_nccl__group_depth() == 0)
        return split_blocking(n, comm_id, parent, color, key, share, &knobs, trace_key, timeout, what, new_id);
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER; /* NCCL copies it during the call */
    config.blocking = 0;
    hidet_nccl__knobs_apply(&knobs, &config);
    if (share != HIDET_NCCL_UNSET) config.splitShare = share;
    /* NCCL writes the new communicator when the split's job has run, which for a
     * non-blocking parent may be after the call returns: give it an address that lives on. */
    ncclComm_t *child = malloc(sizeof *child);
    if (child == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for a split");
    *child = NULL;
    int in_group = hidet_nccl__group_depth() > 0;
    int id = -1;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (in_group && color != HIDET_NCCL_SPLIT_NOCOLOR) {
        st = hidet_nccl__registry_add(NULL, 1, 0, -1, trace_key, &id);
        if (st == HIDET_NCCL_SUCCESS) hidet_nccl__registry_set_knobs(id, &knobs);
    }
    if (st != HIDET_NCCL_SUCCESS) {
        free(child);
        return st;
    }
    ncclResult_t r = n->CommSplit(parent, color, key, child, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
        st = hidet_nccl__nccl_fail(__func__, what, r, parent);
        if (id >= 0) hidet_nccl__registry_fill(id, NULL, 0, -1);
        free(child);
        return st;
    }
    if (in_group) {
        /* Even for NOCOLOR, NCCL may write *child at group end: it stays alive until then. */
        st = hidet_nccl__group_track(parent);
        if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__group_add_split(id, child);
        else free(child);
        *new_id = id; /* a pending id until group_end; -1 for NOCOLOR */
        return st;
    }
    /* The parent carries the split's job: once it is ready, *child is final. */
    st = hidet_nccl__await(n, &parent, 1, timeout, 0, what);
    if (st == HIDET_NCCL_SUCCESS && *child != NULL) st = hidet_nccl__await(n, child, 1, timeout, 1, what);
    ncclComm_t made = *child;
    free(child);
    if (st != HIDET_NCCL_SUCCESS) return st;
    if (made == NULL) {
        *new_id = -1;
        return HIDET_NCCL_SUCCESS;
    }
    return hidet_nccl__registry_add_child(n, made, trace_key, &knobs, new_id);
}
