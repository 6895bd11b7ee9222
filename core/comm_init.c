/* Owned communicators from a unique id: one rank per process, or all GPUs of one process. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cuda_int.h"
#include "core/error_int.h"
#include "core/log_int.h"
#include "core/registry_int.h"
#include "core/wait_int.h"

hidet_nccl_status_t hidet_nccl_get_unique_id(ncclUniqueId *id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(id);
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GetUniqueId(id);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGetUniqueId", r, NULL);
    return HIDET_NCCL_SUCCESS;
}

/* Communicators are created non-blocking, so that init can be awaited against a deadline and
 * aborted. NCCL then enqueues every collective on such a communicator asynchronously (about
 * 50 us each at 8 bytes on 2 H200s, against 6.5 us on a blocking one), so once init has
 * succeeded each is split (ncclCommSplit, NCCL 2.18+, sharing its resources) into a blocking
 * child, which is what the registry holds. The parent lives until the child is released. */
typedef struct parent_link {
    ncclComm_t child, parent;
    struct parent_link *next;
} parent_link_t;
static pthread_mutex_t g_parents_lock = PTHREAD_MUTEX_INITIALIZER;
static parent_link_t *g_parents;

static void remember_parent(ncclComm_t child, ncclComm_t parent) {
    parent_link_t *l = malloc(sizeof *l);
    if (l == NULL) return; /* the parent is then leaked, not misused */
    pthread_mutex_lock(&g_parents_lock);
    *l = (parent_link_t){child, parent, g_parents};
    g_parents = l;
    pthread_mutex_unlock(&g_parents_lock);
}

ncclComm_t hidet_nccl__take_parent(ncclComm_t child) {
    ncclComm_t parent = NULL;
    pthread_mutex_lock(&g_parents_lock);
    for (parent_link_t **p = &g_parents; *p; p = &(*p)->next) {
        if ((*p)->child == child) {
            parent_link_t *l = *p;
            parent = l->parent;
            *p = l->next;
            free(l);
            break;
        }
    }
    pthread_mutex_unlock(&g_parents_lock);
    return parent;
}

/* Replaces comms[i] (initialized, non-blocking, rank ranks[i]) by blocking children. On
 * failure the parents are left in comms[] for the caller to destroy. */
static hidet_nccl_status_t to_blocking(const hn_nccl_t *n, ncclComm_t *comms, const int *ranks, int count,
                                       double timeout) {
    const char *keep = getenv("HIDET_NCCL_NONBLOCKING");
    if (n->CommSplit == NULL || (keep != NULL && strcmp(keep, "1") == 0)) return HIDET_NCCL_SUCCESS;
    ncclComm_t children[64];
    if (count > 64) return HIDET_NCCL_SUCCESS;
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 1;
    config.splitShare = 1; /* the child uses the parent's channels and buffers: no second copy */
    ncclResult_t r = count > 1 ? n->GroupStart() : ncclSuccess;
    for (int i = 0; i < count && (r == ncclSuccess || r == ncclInProgress); i++) {
        children[i] = NULL;
        r = n->CommSplit(comms[i], 0, ranks[i], &children[i], &config);
    }
    if (count > 1) {
        ncclResult_t e = n->GroupEnd();
        if (r == ncclSuccess || r == ncclInProgress) r = e;
    }
    if (r != ncclSuccess && r != ncclInProgress)
        return hidet_nccl__nccl_fail("hidet_nccl_comm_init", "ncclCommSplit into a blocking communicator", r, comms[0]);
    HN_CHECK(hidet_nccl__await(n, comms, count, timeout, 0, "ncclCommSplit into a blocking communicator"));
    for (int i = 0; i < count; i++) {
        if (children[i] == NULL)
            return HN_FAIL(HIDET_NCCL_ERROR_NCCL, "ncclCommSplit into a blocking communicator gave none (rank %d)",
                           ranks[i]);
        remember_parent(children[i], comms[i]);
        comms[i] = children[i];
    }
    return HIDET_NCCL_SUCCESS;
}

/* Starts one rank's init, non-blocking when NCCL has ncclCommInitRankConfig (2.14). */
static hidet_nccl_status_t start_init(const hn_nccl_t *n, ncclComm_t *comm, int nranks, const ncclUniqueId *id,
                                      int rank) {
    ncclResult_t r;
    if (n->CommInitRankConfig != NULL) {
        ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
        config.blocking = 0;
        r = n->CommInitRankConfig(comm, nranks, *id, rank, &config);
    } else {
        HN_INFO("NCCL %d has no ncclCommInitRankConfig (2.14); rank %d initializes blocking, without a deadline",
                n->version, rank);
        r = n->CommInitRank(comm, nranks, *id, rank);
    }
    if (r != ncclSuccess && r != ncclInProgress) {
        char call[96];
        snprintf(call, sizeof call, "ncclCommInitRank(nranks %d, rank %d)", nranks, rank);
        return hidet_nccl__nccl_fail("hidet_nccl_comm_init", call, r, *comm);
    }
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__init_rank(int nranks, const ncclUniqueId *id, int rank, double timeout,
                                          int *comm_id) {
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    int device;
    HN_CHECK(hidet_nccl__current_device(&device));
    ncclComm_t comm = NULL;
    HN_CHECK(start_init(n, &comm, nranks, id, rank));
    if (hidet_nccl__group_depth() > 0) {
        HN_CHECK(hidet_nccl__group_track(comm));
    } else {
        char what[160];
        snprintf(what, sizeof what, "ncclCommInitRank of rank %d of %d on device %d (all %d ranks must join)", rank,
                 nranks, device, nranks);
        HN_CHECK(hidet_nccl__await(n, &comm, 1, timeout, 1, what));
        hidet_nccl_status_t bst = to_blocking(n, &comm, &rank, 1, timeout);
        if (bst != HIDET_NCCL_SUCCESS) {
            n->CommAbort(comm);
            return bst;
        }
    }
    hidet_nccl_status_t st = hidet_nccl__registry_add(comm, 1, nranks, comm_id);
    if (st != HIDET_NCCL_SUCCESS) {
        n->CommDestroy(comm);
        return st;
    }
    hidet_nccl__log_set_rank(rank);
    HN_INFO("communicator id %d: rank %d of %d on device %d", *comm_id, rank, nranks, device);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_comm_init_rank(int nranks, const ncclUniqueId *id, int rank, int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(id);
    HN_CHECK_NOT_NULL(comm_id);
    if (nranks < 1) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "nranks %d is less than 1", nranks);
    if (rank < 0 || rank >= nranks)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "rank %d is not in 0 .. %d (nranks %d)", rank, nranks - 1,
                       nranks);
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    return hidet_nccl__init_rank(nranks, id, rank, timeout, comm_id);
}

hidet_nccl_status_t hidet_nccl_comm_init_all(int ndev, const int *devices, int *comm_ids) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm_ids);
    if (ndev < 1) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "ndev %d is less than 1", ndev);
    if (hidet_nccl__group_depth() > 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "comm_init_all makes its own group; call it outside one");
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    for (int i = 0; i < ndev; i++) {
        int d = devices ? devices[i] : i;
        if (d < 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device %d (rank %d) is negative", d, i);
        for (int j = 0; j < i; j++)
            if ((devices ? devices[j] : j) == d)
                return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                               "device %d is given for rank %d and rank %d; two ranks of one communicator on one "
                               "GPU would hang NCCL", d, j, i);
    }
    int visible = 0;
    cudaError_t ce = cudaGetDeviceCount(&visible);
    if (ce != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaGetDeviceCount", ce);
    for (int i = 0; i < ndev; i++)
        if ((devices ? devices[i] : i) >= visible)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device %d (rank %d) is not one of the %d visible GPUs",
                           devices ? devices[i] : i, i, visible);
    ncclComm_t *comms = calloc((size_t)ndev, sizeof *comms);
    if (comms == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d communicators", ndev);
    int saved_device = 0;
    cudaGetDevice(&saved_device);
    hidet_nccl_status_t st;
    ncclUniqueId id;
    ncclResult_t r = n->GetUniqueId(&id);
    if (r != ncclSuccess) {
        st = hidet_nccl__nccl_fail(__func__, "ncclGetUniqueId", r, NULL);
        goto out;
    }
    r = n->GroupStart();
    if (r != ncclSuccess) {
        st = hidet_nccl__nccl_fail(__func__, "ncclGroupStart", r, NULL);
        goto out;
    }
    st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < ndev && st == HIDET_NCCL_SUCCESS; i++) {
        ce = cudaSetDevice(devices ? devices[i] : i);
        st = ce != cudaSuccess ? hidet_nccl__cuda_fail(__func__, "cudaSetDevice", ce)
                               : start_init(n, &comms[i], ndev, &id, i);
    }
    r = n->GroupEnd();
    if (st == HIDET_NCCL_SUCCESS && r != ncclSuccess && r != ncclInProgress)
        st = hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
    if (st == HIDET_NCCL_SUCCESS) {
        char what[96];
        snprintf(what, sizeof what, "ncclCommInitAll of %d GPUs", ndev);
        st = hidet_nccl__await(n, comms, ndev, timeout, 1, what);
        if (st == HIDET_NCCL_SUCCESS && ndev <= 64) {
            int ranks[64];
            for (int i = 0; i < ndev; i++) ranks[i] = i;
            st = to_blocking(n, comms, ranks, ndev, timeout);
        }
    } else {
        for (int i = 0; i < ndev; i++)
            if (comms[i] != NULL) {
                n->CommAbort(comms[i]);
                comms[i] = NULL;
            }
    }
    for (int i = 0; i < ndev && st == HIDET_NCCL_SUCCESS; i++) {
        st = hidet_nccl__registry_add(comms[i], 1, ndev, &comm_ids[i]);
        if (st == HIDET_NCCL_SUCCESS) comms[i] = NULL;
    }
    if (st != HIDET_NCCL_SUCCESS) { /* nothing half-made is left behind */
        for (int i = 0; i < ndev; i++) {
            if (comms[i] != NULL) n->CommDestroy(comms[i]);
            comm_ids[i] = -1;
        }
    }
out:
    cudaSetDevice(saved_device);
    free(comms);
    return st;
}
