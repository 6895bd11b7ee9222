/* Owned communicators from a unique id: one rank per process, or all GPUs of one process. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/comm/blocking_call_int.h"
#include "core/comm/comm_init_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/base/log_int.h"
#include "core/comm/registry_int.h"
#include "core/comm/wait_int.h"

hidet_nccl_status_t hidet_nccl_get_unique_id(ncclUniqueId *id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(id);
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    ncclResult_t r = n->GetUniqueId(id);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGetUniqueId", r, NULL);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__want_blocking(int *blocking) {
    int nonblocking = 0;
    HN_CHECK(hidet_nccl__setting_int(HN_SETTING_NONBLOCKING, &nonblocking));
    *blocking = !nonblocking;
    return HIDET_NCCL_SUCCESS;
}

/* Starts one rank's init: blocking or non-blocking when NCCL has ncclCommInitRankConfig
 * (2.14), else blocking; with several ids (roots), ncclCommInitRankScalable (2.23). */
static ncclResult_t start_init(const hn_nccl_t *n, ncclComm_t *comm, int nranks, const ncclUniqueId *ids, int nids,
                               int rank, int blocking, const hn_knobs_t *knobs) {
    if (n->CommInitRankConfig == NULL) return n->CommInitRank(comm, nranks, ids[0], rank); /* knobs refused before */
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = blocking;
    hidet_nccl__knobs_apply(knobs, &config);
    if (nids > 1) return n->CommInitRankScalable(comm, nranks, rank, nids, (ncclUniqueId *)ids, &config);
    return n->CommInitRankConfig(comm, nranks, ids[0], rank, &config);
}

static hidet_nccl_status_t init_failed(const hn_nccl_t *n, ncclResult_t r, int nranks, int nids, int rank,
                                       ncclComm_t comm) {
    char call[128];
    if (nids > 1)
        snprintf(call, sizeof call, "ncclCommInitRankScalable(nranks %d, rank %d, %d roots)", nranks, rank, nids);
    else
        snprintf(call, sizeof call, "ncclCommInitRank(nranks %d, rank %d)", nranks, rank);
    hidet_nccl_status_t st = hidet_nccl__nccl_fail("hidet_nccl_comm_init", call, r, comm);
    if (comm != NULL) n->CommAbort(comm);
    return st;
}

/* A blocking init, run by hidet_nccl__blocking_call on its helper thread; the ids travel with
 * the job (the helper may outlive the caller). */
typedef struct {
    const hn_nccl_t *n;
    ncclComm_t comm;
    int nranks, rank, nids;
    hn_knobs_t knobs;
    ncclUniqueId ids[];
} init_job_t;

static ncclResult_t run_init(void *p) {
    init_job_t *a = p;
    return start_init(a->n, &a->comm, a->nranks, a->ids, a->nids, a->rank, 1, &a->knobs);
}

static void late_init(void *p, ncclResult_t r) {
    init_job_t *a = p;
    (void)r;
    if (a->comm != NULL) a->n->CommAbort(a->comm);
}

/* Blocking mode (the default): the init runs blocking on a helper thread, awaited up to the
 * deadline. Non-blocking mode, and inside a group: NCCL's own non-blocking init, polled (at
 * group_end inside a group). */
hidet_nccl_status_t hidet_nccl__init_rank(int nranks, const ncclUniqueId *ids, int nids, int rank, double timeout,
                                          const hn_knobs_t *knobs, int *comm_id) {
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    hn_knobs_t none;
    if (knobs == NULL) {
        hidet_nccl__knobs_none(&none);
        knobs = &none;
    }
    if (nids > 1 && n->CommInitRankScalable == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "an init with %d roots needs NCCL 2.23 (ncclCommInitRankScalable)",
                       nids);
    int device;
    HN_CHECK(hidet_nccl__current_device(&device));
    char what[160];
    snprintf(what, sizeof what, "ncclCommInitRank of rank %d of %d on device %d (all %d ranks must join)", rank,
             nranks, device, nranks);
    ncclComm_t comm = NULL;
    int blocking;
    HN_CHECK(hidet_nccl__want_blocking(&blocking));
    if (blocking && hidet_nccl__group_depth() == 0) {
        size_t bytes = sizeof(init_job_t) + (size_t)nids * sizeof(ncclUniqueId);
        init_job_t *job = malloc(bytes);
        if (job == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ids", nids);
        *job = (init_job_t){n, NULL, nranks, rank, nids, *knobs};
        memcpy(job->ids, ids, (size_t)nids * sizeof(ncclUniqueId));
        ncclResult_t r;
        hidet_nccl_status_t st = hidet_nccl__blocking_call(&(hn_blocking_call_t){run_init, late_init}, job, bytes,
                                                           device, timeout, what, &r);
        comm = job->comm;
        free(job);
        HN_CHECK(st);
        if (r != ncclSuccess) return init_failed(n, r, nranks, nids, rank, comm);
    } else {
        ncclResult_t r = start_init(n, &comm, nranks, ids, nids, rank, 0, knobs);
        if (r != ncclSuccess && r != ncclInProgress) return init_failed(n, r, nranks, nids, rank, comm);
        if (hidet_nccl__group_depth() > 0) HN_CHECK(hidet_nccl__group_track(comm));
        else HN_CHECK(hidet_nccl__await(n, &comm, 1, timeout, 1, what));
    }
    hidet_nccl_status_t st =
        hidet_nccl__registry_add(comm, 1, nranks, rank, hidet_nccl__trace_key_id(ids, (size_t)nids * sizeof *ids, nranks),
                                 comm_id);
    if (st != HIDET_NCCL_SUCCESS) {
        n->CommDestroy(comm);
        return st;
    }
    hidet_nccl__registry_set_knobs(*comm_id, knobs);
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
    return hidet_nccl__init_rank(nranks, id, 1, rank, timeout, NULL, comm_id);
}

/* Every device non-negative, given once, and visible. */
static hidet_nccl_status_t check_devices(int ndev, const int *devices) {
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
    if (ce != cudaSuccess) return hidet_nccl__cuda_fail("hidet_nccl_comm_init_all", "cudaGetDeviceCount", ce);
    for (int i = 0; i < ndev; i++)
        if ((devices ? devices[i] : i) >= visible)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device %d (rank %d) is not one of the %d visible GPUs",
                           devices ? devices[i] : i, i, visible);
    return HIDET_NCCL_SUCCESS;
}

static void abort_all(const hn_nccl_t *n, ncclComm_t *comms, int ndev) {
    for (int i = 0; i < ndev; i++)
        if (comms[i] != NULL) {
            n->CommAbort(comms[i]);
            comms[i] = NULL;
        }
}

/* Every rank is in this call, so no rank can fail to arrive: one group of inits in this
 * thread (blocking mode: ncclGroupEnd returns when all are ready), then awaited. On failure
 * every communicator made is aborted. */
static hidet_nccl_status_t init_group(const hn_nccl_t *n, int ndev, const int *devices, ncclComm_t *comms,
                                      double timeout, uint32_t *key) {
    int blocking;
    HN_CHECK(hidet_nccl__want_blocking(&blocking));
    hn_knobs_t none;
    hidet_nccl__knobs_none(&none);
    ncclUniqueId id;
    ncclResult_t r = n->GetUniqueId(&id);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGetUniqueId", r, NULL);
    *key = hidet_nccl__trace_key_id(&id, sizeof id, ndev);
    r = n->GroupStart();
    if (r != ncclSuccess) return hidet_nccl__nccl_fail(__func__, "ncclGroupStart", r, NULL);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    for (int i = 0; i < ndev && st == HIDET_NCCL_SUCCESS; i++) {
        cudaError_t ce = cudaSetDevice(devices ? devices[i] : i);
        if (ce != cudaSuccess) {
            st = hidet_nccl__cuda_fail(__func__, "cudaSetDevice", ce);
            break;
        }
        r = start_init(n, &comms[i], ndev, &id, 1, i, blocking, &none);
        if (r != ncclSuccess && r != ncclInProgress) st = hidet_nccl__nccl_fail(__func__, "ncclCommInitRank", r, NULL);
    }
    r = n->GroupEnd();
    if (st == HIDET_NCCL_SUCCESS && r != ncclSuccess && r != ncclInProgress)
        st = hidet_nccl__nccl_fail(__func__, "ncclGroupEnd", r, NULL);
    if (st != HIDET_NCCL_SUCCESS) {
        abort_all(n, comms, ndev);
        return st;
    }
    char what[96];
    snprintf(what, sizeof what, "ncclCommInitAll of %d GPUs", ndev);
    return hidet_nccl__await(n, comms, ndev, timeout, 1, what); /* aborts them all on failure */
}

/* Registers every communicator, or none: on a failure the ids given so far are taken back
 * and every communicator is destroyed. */
static hidet_nccl_status_t register_all(const hn_nccl_t *n, int ndev, ncclComm_t *comms, uint32_t key,
                                        int *comm_ids) {
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    int done = 0;
    for (; done < ndev && st == HIDET_NCCL_SUCCESS; done++) {
        st = hidet_nccl__registry_add(comms[done], 1, ndev, done, key, &comm_ids[done]);
        if (st != HIDET_NCCL_SUCCESS) break;
    }
    if (st == HIDET_NCCL_SUCCESS) return st;
    for (int i = 0; i < done; i++) {
        ncclComm_t c;
        int owned;
        hidet_nccl__registry_kill(comm_ids[i], "released: hidet_nccl_comm_init_all failed after giving it", &c, &owned,
                                  NULL);
    }
    for (int i = 0; i < ndev; i++) {
        n->CommDestroy(comms[i]);
        comm_ids[i] = -1;
    }
    return st;
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
    HN_CHECK(check_devices(ndev, devices));
    ncclComm_t *comms = calloc((size_t)ndev, sizeof *comms);
    if (comms == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d communicators", ndev);
    int saved_device = 0;
    cudaGetDevice(&saved_device);
    uint32_t key = 0;
    hidet_nccl_status_t st = init_group(n, ndev, devices, comms, timeout, &key);
    if (st == HIDET_NCCL_SUCCESS) st = register_all(n, ndev, comms, key, comm_ids); /* nothing half-made is left behind */
    if (st != HIDET_NCCL_SUCCESS)
        for (int i = 0; i < ndev; i++) comm_ids[i] = -1;
    cudaSetDevice(saved_device);
    free(comms);
    return st;
}
