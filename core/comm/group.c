/* ncclGroupStart/End for the calling thread, and the communicators used inside a group. */
#include <stdlib.h>
#include <string.h>

#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

/* The group's depth, its tracked communicators and its splits live in the thread's block
 * (hidet_nccl__thread.group_*, core/base/thread_int.h): every collective reads the depth. */
#define INLINE_TRACKED 16

/* The communicators used in the group: in this array of the thread's, spilling to the heap
 * past INLINE_TRACKED (a group of a few calls allocates nothing). */
static _Thread_local ncclComm_t t_inline[INLINE_TRACKED];

/* Splits inside the group: NCCL writes each new communicator into *child when the group's
 * job runs, so child lives on the heap until group_end registers it under id (-1: NOCOLOR,
 * nothing to register). */
typedef struct pending_split {
    int id;
    ncclComm_t *child;
    struct pending_split *next;
} pending_split_t;

hidet_nccl_status_t hidet_nccl__group_add_split(int id, ncclComm_t *child) {
    pending_split_t *p = malloc(sizeof *p);
    if (p == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory recording a split");
    *p = (pending_split_t){id, child, hidet_nccl__thread.group_splits};
    hidet_nccl__thread.group_splits = p;
    return HIDET_NCCL_SUCCESS;
}

/* After the group: registers each split's communicator, or on failure aborts it and marks
 * its id dead. */
static hidet_nccl_status_t finish_splits(const hn_nccl_t *n, hidet_nccl_status_t st, double timeout) {
    int count = 0;
    for (pending_split_t *p = hidet_nccl__thread.group_splits; p; p = p->next) count++;
    ncclComm_t *children = count ? calloc((size_t)count, sizeof *children) : NULL;
    if (count && children == NULL && st == HIDET_NCCL_SUCCESS)
        st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory finishing %d splits", count);
    int i = 0;
    for (pending_split_t *p = hidet_nccl__thread.group_splits; p; p = p->next, i++) {
        if (children) children[i] = *p->child;
        if (st == HIDET_NCCL_SUCCESS && *p->child == NULL && p->id >= 0)
            st = HN_FAIL(HIDET_NCCL_ERROR_NCCL, "ncclCommSplit gave no communicator for id %d", p->id);
    }
    if (st == HIDET_NCCL_SUCCESS && count)
        st = hidet_nccl__await(n, children, count, timeout, 1, "the communicators split in the group");
    i = 0;
    for (pending_split_t *p = hidet_nccl__thread.group_splits, *next; p; p = next, i++) {
        next = p->next;
        ncclComm_t c = *p->child;
        if (st != HIDET_NCCL_SUCCESS && c != NULL && children && children[i] != NULL) n->CommAbort(c);
        int nranks = 0, rank = -1;
        if (st == HIDET_NCCL_SUCCESS && c != NULL) n->CommCount(c, &nranks), n->CommUserRank(c, &rank);
        if (p->id >= 0) hidet_nccl__registry_fill(p->id, st == HIDET_NCCL_SUCCESS ? c : NULL, nranks, rank);
        free(p->child);
        free(p);
    }
    hidet_nccl__thread.group_splits = NULL;
    free(children);
    return st;
}

hidet_nccl_status_t hidet_nccl__group_track_more(ncclComm_t comm) {
    if (hidet_nccl__thread.group_tracked == NULL) { /* the second communicator: the first goes first */
        hidet_nccl__thread.group_tracked = t_inline;
        hidet_nccl__thread.group_captracked = INLINE_TRACKED;
        t_inline[0] = hidet_nccl__thread.group_first;
        hidet_nccl__thread.group_ntracked = 1;
    }
    for (int i = 0; i < hidet_nccl__thread.group_ntracked; i++)
        if (hidet_nccl__thread.group_tracked[i] == comm) return HIDET_NCCL_SUCCESS;
    if (hidet_nccl__thread.group_ntracked == hidet_nccl__thread.group_captracked) {
        int cap = 2 * hidet_nccl__thread.group_captracked;
        ncclComm_t *p = malloc((size_t)cap * sizeof *p);
        if (p == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory tracking %d communicators", cap);
        memcpy(p, hidet_nccl__thread.group_tracked, (size_t)hidet_nccl__thread.group_ntracked * sizeof *p);
        if (hidet_nccl__thread.group_tracked != t_inline) free(hidet_nccl__thread.group_tracked);
        hidet_nccl__thread.group_tracked = p;
        hidet_nccl__thread.group_captracked = cap;
    }
    hidet_nccl__thread.group_tracked[hidet_nccl__thread.group_ntracked++] = comm;
    return HIDET_NCCL_SUCCESS;
}

HN_HOT hidet_nccl_status_t hidet_nccl_group_start(void) {
    HN_ENTER();
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GroupStart();
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGroupStart", r, NULL);
    hidet_nccl__thread.group_depth++;
    return HIDET_NCCL_SUCCESS;
}

HN_HOT hidet_nccl_status_t hidet_nccl_group_end(void) {
    HN_ENTER();
    if (hidet_nccl__thread.group_depth == 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "group_end without a matching group_start in this thread");
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GroupEnd();
    hidet_nccl__thread.group_depth--;
    if (hidet_nccl__thread.group_depth > 0) {
        if (r != ncclSuccess && r != ncclInProgress) return hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
        return HIDET_NCCL_SUCCESS;
    }
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    double timeout = 0; /* read below; finish_splits awaits only after a success */
    if (r != ncclSuccess && r != ncclInProgress) {
        st = hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
    } else if (r == ncclInProgress || hidet_nccl__thread.group_splits != NULL) {
        /* Non-blocking communicators are still enqueuing: wait for them against the deadline.
         * ncclSuccess means every operation is enqueued (blocking ones always are): nothing to
         * wait for, as with raw NCCL (a collective outside a group asks no more either). */
        st = hidet_nccl__timeout_seconds(&timeout);
        /* one communicator: the first; more: the array holds them all (group_track_more) */
        ncclComm_t *tracked = hidet_nccl__thread.group_tracked;
        int ntracked = hidet_nccl__thread.group_ntracked;
        if (tracked == NULL) {
            tracked = &hidet_nccl__thread.group_first;
            ntracked = hidet_nccl__thread.group_first != NULL;
        }
        if (st == HIDET_NCCL_SUCCESS && r == ncclInProgress)
            st = hidet_nccl__await(n, tracked, ntracked, timeout, 0, "the group's NCCL operations");
    }
    if (hidet_nccl__thread.group_splits != NULL) st = finish_splits(n, st, timeout);
    if (hidet_nccl__thread.group_tracked != NULL && hidet_nccl__thread.group_tracked != t_inline)
        free(hidet_nccl__thread.group_tracked);
    hidet_nccl__thread.group_tracked = NULL;
    hidet_nccl__thread.group_first = NULL;
    hidet_nccl__thread.group_ntracked = hidet_nccl__thread.group_captracked = 0;
    return st;
}
