/* ncclGroupStart/End for the calling thread, and the communicators used inside a group. */
#include <stdlib.h>

#include "core/error_int.h"
#include "core/wait_int.h"

static _Thread_local int t_depth;
static _Thread_local ncclComm_t *t_tracked;
static _Thread_local int t_ntracked, t_captracked;

int hidet_nccl__group_depth(void) { return t_depth; }

hidet_nccl_status_t hidet_nccl__group_track(ncclComm_t comm) {
    for (int i = 0; i < t_ntracked; i++)
        if (t_tracked[i] == comm) return HIDET_NCCL_SUCCESS;
    if (t_ntracked == t_captracked) {
        int cap = t_captracked ? 2 * t_captracked : 16;
        ncclComm_t *p = realloc(t_tracked, (size_t)cap * sizeof *p);
        if (p == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory tracking %d communicators", cap);
        t_tracked = p;
        t_captracked = cap;
    }
    t_tracked[t_ntracked++] = comm;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_group_start(void) {
    hidet_nccl__clear_error();
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GroupStart();
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGroupStart", r, NULL);
    t_depth++;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_group_end(void) {
    hidet_nccl__clear_error();
    if (t_depth == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "group_end without a matching group_start in this thread");
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GroupEnd();
    t_depth--;
    if (t_depth > 0) {
        if (r != ncclSuccess && r != ncclInProgress) return hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
        return HIDET_NCCL_SUCCESS;
    }
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (r != ncclSuccess && r != ncclInProgress) {
        st = hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
    } else {
        double timeout;
        st = hidet_nccl__timeout_seconds(&timeout);
        if (st == HIDET_NCCL_SUCCESS)
            st = hidet_nccl__await(n, t_tracked, t_ntracked, timeout, 0, "the group's NCCL operations");
    }
    free(t_tracked);
    t_tracked = NULL;
    t_ntracked = t_captracked = 0;
    return st;
}
