/* Communicators from a bootstrap: hidet_nccl_comm_init (a restarted rank's heal round first,
 * then GPU choice, placement check, id broadcast, init), and the one-call starts built on it (hidet_nccl_init, and
 * hidet_nccl__comm_init_over for hidet_nccl_mpi_comm_init). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/boot/bootstrap_int.h"
#include "core/boot/bootstrap_heal_int.h"
#include "core/boot/comm_bootstrap_int.h"
#include "core/boot/comm_joined_int.h"
#include "core/comm/comm_init_int.h"
#include "core/nccl/cuda_int.h"
#include "core/comm/device_select_int.h"
#include "core/base/status_int.h"
#include "core/boot/init_roots_int.h"
#include "core/base/log_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_config_int.h"
#include "core/nccl/nccl_version_int.h"

/* What rank 0 broadcasts: the id, or why there is none. */
typedef struct {
    int32_t status; /* hidet_nccl_status_t of rank 0's ncclGetUniqueId */
    char reason[380];
    ncclUniqueId id;
} root_message_t;

/* What each rank tells the others (every bootstrap has an allgather: the v1 adapter makes one
 * of broadcasts), to refuse two ranks on one GPU of one host before NCCL hangs on it. */
typedef struct {
    char host[64];
    char bus_id[32];
} placement_t;

static hidet_nccl_status_t check_placement(hidet_nccl_bootstrap_h bs, int rank, int size, int device,
                                           double timeout) {
    placement_t mine; /* the host as NCCL tells hosts apart: NCCL_HOSTID, else the host name */
    memset(&mine, 0, sizeof mine);
    const char *host_id = hidet_nccl__setting_str(HN_SETTING_NCCL_HOSTID);
    if (host_id != NULL) snprintf(mine.host, sizeof mine.host, "%s", host_id);
    else gethostname(mine.host, sizeof mine.host - 1);
    cudaError_t e = cudaDeviceGetPCIBusId(mine.bus_id, sizeof mine.bus_id, device);
    if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaDeviceGetPCIBusId", e);
    placement_t *all = calloc((size_t)size, sizeof *all);
    if (all == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d placements", size);
    hidet_nccl_status_t st = hidet_nccl__bootstrap_allgather(bs, &mine, all, sizeof mine, timeout);
    for (int a = 0; st == HIDET_NCCL_SUCCESS && a < size; a++) {
        all[a].host[sizeof all[a].host - 1] = all[a].bus_id[sizeof all[a].bus_id - 1] = '\0';
        for (int b = a + 1; b < size; b++) {
            if (strcmp(all[a].host, all[b].host) == 0 && strcmp(all[a].bus_id, all[b].bus_id) == 0) {
                st = HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                             "ranks %d and %d would both use GPU %s on host %s (this is rank %d); two ranks of one "
                             "communicator on one GPU hang NCCL. Give each rank its own GPU (more GPUs, fewer "
                             "ranks, or CUDA_VISIBLE_DEVICES)",
                             a, b, all[a].bus_id, all[a].host, rank);
                break;
            }
        }
    }
    free(all);
    return st;
}

/* How many roots: one up to HIDET_NCCL_RANKS_PER_ROOT ranks, else ceil(n / that) when NCCL
 * has ncclCommInitRankScalable (2.23; an older one gets one root and an INFO line). */
static hidet_nccl_status_t root_count(const hn_nccl_t *n, int size, int *nroots) {
    int per_root = 128;
    HN_CHECK(hidet_nccl__setting_int(HN_SETTING_RANKS_PER_ROOT, &per_root));
    *nroots = hidet_nccl__init_roots(size, per_root);
    if (*nroots > 1 && n->CommInitRankScalable == NULL) {
        HN_INFO("%d ranks would take %d roots (HIDET_NCCL_RANKS_PER_ROOT=%d), but NCCL %d.%d.%d has no "
                "ncclCommInitRankScalable (2.23): one root",
                size, *nroots, per_root, hidet_nccl__version_major(n->version), hidet_nccl__version_minor(n->version),
                hidet_nccl__version_patch(n->version));
        *nroots = 1;
    }
    return HIDET_NCCL_SUCCESS;
}

/* This rank's fresh id, or why there is none. */
static void make_id(const hn_nccl_t *n, root_message_t *m) {
    ncclResult_t r = n->GetUniqueId(&m->id); /* a fresh id for every communicator */
    if (r != ncclSuccess) {
        m->status = HIDET_NCCL_ERROR_NCCL;
        snprintf(m->reason, sizeof m->reason, "ncclGetUniqueId failed: %s", n->GetErrorString(r));
    }
}

/* One root: rank 0's id (or its failure), broadcast. */
static hidet_nccl_status_t one_root(const hn_nccl_t *n, hidet_nccl_bootstrap_h bs, int rank, double timeout,
                                    ncclUniqueId *id) {
    root_message_t m;
    memset(&m, 0, sizeof m);
    if (rank == 0) make_id(n, &m);
    HN_CHECK(hidet_nccl__bootstrap_broadcast(bs, &m, sizeof m, 0, timeout));
    if (m.status != HIDET_NCCL_SUCCESS) {
        m.reason[sizeof m.reason - 1] = '\0';
        return HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "rank 0 could not make the NCCL id: %s", m.reason);
    }
    *id = m.id;
    return HIDET_NCCL_SUCCESS;
}

/* Several roots (hidet_nccl__init_root_index): each makes an id; an allgather brings every
 * root's id (or its failure) to every rank, in root order. */
static hidet_nccl_status_t many_roots(const hn_nccl_t *n, hidet_nccl_bootstrap_h bs, int rank, int size, int nroots,
                                      double timeout, ncclUniqueId *ids) {
    typedef struct {
        int32_t status;
        ncclUniqueId id;
    } root_id_t;
    root_id_t mine;
    memset(&mine, 0, sizeof mine);
    if (hidet_nccl__init_root_index(rank, size, nroots) >= 0) {
        root_message_t m;
        memset(&m, 0, sizeof m);
        make_id(n, &m);
        mine.status = m.status;
        mine.id = m.id;
    }
    root_id_t *all = calloc((size_t)size, sizeof *all);
    if (all == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ranks' ids", size);
    hidet_nccl_status_t st = hidet_nccl__bootstrap_allgather(bs, &mine, all, sizeof mine, timeout);
    for (int r = 0; st == HIDET_NCCL_SUCCESS && r < size; r++) {
        int i = hidet_nccl__init_root_index(r, size, nroots);
        if (i < 0) continue;
        if (all[r].status != HIDET_NCCL_SUCCESS)
            st = HN_FAIL(HIDET_NCCL_ERROR_BOOTSTRAP, "rank %d (root %d of %d) could not make its NCCL id", r, i, nroots);
        else
            ids[i] = all[r].id;
    }
    free(all);
    return st;
}

static hidet_nccl_status_t init_over(hidet_nccl_bootstrap_h bs, int device_choice, double timeout,
                                     const hn_knobs_t *knobs, int *comm_id);

hidet_nccl_status_t hidet_nccl_comm_init(hidet_nccl_bootstrap_h bs, const hidet_nccl_init_options_t *options,
                                         int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(bs);
    HN_CHECK_NOT_NULL(comm_id);
    hidet_nccl_init_options_t opt = HIDET_NCCL_INIT_OPTIONS_INIT;
    char why[384];
    if (options != NULL && hidet_nccl__copy_sized(&opt, sizeof opt, options, "options", why, sizeof why) != 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    double timeout;
    HN_CHECK(hidet_nccl__deadline_seconds(opt.timeout_s, "options->timeout_s", &timeout));
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    hn_knobs_t knobs;
    HN_CHECK(hidet_nccl__knobs_from(n, &opt, &knobs));
    return hidet_nccl__comm_init_knobs(bs, opt.device, timeout, &knobs, comm_id);
}

hidet_nccl_status_t hidet_nccl__comm_init_knobs(hidet_nccl_bootstrap_h bs, int device_choice, double timeout,
                                                const hn_knobs_t *knobs, int *comm_id) {
    double start = hidet_nccl__now();
    unsigned char *members = NULL, *joined = NULL;
    int n_members = 0, n_joined = 0;
    if (bs->joining) /* a restarted rank: the members' heal round takes it in, then both sides go on alike */
        HN_CHECK(hidet_nccl__bootstrap_heal(bs, timeout, &members, &joined, &n_members, &n_joined));
    double healed = hidet_nccl__now();
    hidet_nccl_status_t st = init_over(bs, device_choice, timeout - (healed - start), knobs, comm_id);
    if (st == HIDET_NCCL_SUCCESS && joined != NULL) {
        hidet_nccl__comm_joined_set(*comm_id, bs, joined);
        HN_INFO("comm_init through bootstrap '%s': a restarted rank joined the job (heal round %.2f ms, %d of %d "
                "ranks, %d taken in) and is rank %d of communicator id %d",
                bs->ops.name, (healed - start) * 1e3, n_members, bs->job_size, n_joined, bs->job_rank, *comm_id);
    }
    free(members), free(joined);
    return st;
}

/* comm_init over a bootstrap that is not joining. */
static hidet_nccl_status_t init_over(hidet_nccl_bootstrap_h bs, int device_choice, double timeout,
                                     const hn_knobs_t *knobs, int *comm_id) {
    double start = hidet_nccl__now();
    if (timeout < 1) timeout = 1;
    int rank, size, local_rank = -1, local_size = -1;
    HN_CHECK(hidet_nccl__bootstrap_rank(bs, &rank, &size));
    HN_CHECK(hidet_nccl__bootstrap_local_rank(bs, &local_rank, &local_size));
    hidet_nccl__log_set_rank(rank);
    const hn_nccl_t *n;
    HN_CHECK(hidet_nccl__nccl(&n));
    int device;
    HN_CHECK(hidet_nccl__select_device(device_choice, local_rank, &device));
    double placed = hidet_nccl__now();
    HN_CHECK(check_placement(bs, rank, size, device, timeout));
    double checked = hidet_nccl__now();

    int nroots = 1;
    HN_CHECK(root_count(n, size, &nroots));
    ncclUniqueId *ids = calloc((size_t)nroots, sizeof *ids);
    if (ids == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory for %d ids", nroots);
    hidet_nccl_status_t st = nroots == 1 ? one_root(n, bs, rank, timeout, ids) : many_roots(n, bs, rank, size, nroots, timeout, ids);
    double spread = hidet_nccl__now();
    double remaining = timeout - (spread - start);
    if (remaining < 1) remaining = 1;
    if (st == HIDET_NCCL_SUCCESS) st = hidet_nccl__init_rank(size, ids, nroots, rank, remaining, knobs, comm_id);
    free(ids);
    if (st != HIDET_NCCL_SUCCESS) return st;
    hidet_nccl__comm_keep_bootstrap(*comm_id, bs, device);
    double end = hidet_nccl__now();
    HN_INFO("comm_init through bootstrap '%s': rank %d of %d on GPU %d ready in %.3f s (id %d, %d root%s): rank and "
            "GPU %.2f ms, placement check %.2f ms, ids %.2f ms, NCCL init %.2f ms",
            bs->ops.name, rank, size, device, end - start, *comm_id, nroots, nroots > 1 ? "s" : "",
            (placed - start) * 1e3, (checked - placed) * 1e3, (spread - checked) * 1e3, (end - spread) * 1e3);
    return HIDET_NCCL_SUCCESS;
}

/* hidet_nccl_comm_init over bs, then bs destroyed. When init fails its message is kept over
 * the release's. */
static hidet_nccl_status_t comm_init_then_release(hidet_nccl_bootstrap_h bs, const hidet_nccl_init_options_t *options,
                                                  int *comm_id) {
    hidet_nccl_status_t st = hidet_nccl_comm_init(bs, options, comm_id);
    if (st == HIDET_NCCL_SUCCESS) return hidet_nccl_bootstrap_destroy(bs); /* a failed release has its message */
    char saved[4096];
    snprintf(saved, sizeof saved, "%s", hidet_nccl_last_error());
    hidet_nccl_bootstrap_destroy(bs);
    hidet_nccl__restore_error(saved); /* the init's failure, not the release's, is the story */
    return st;
}

hidet_nccl_status_t hidet_nccl__comm_init_over(const hidet_nccl_bootstrap_t *ops, const void *params,
                                               const hidet_nccl_init_options_t *options, int *comm_id) {
    HN_CHECK_NOT_NULL(comm_id);
    hidet_nccl_init_options_t opt = HIDET_NCCL_INIT_OPTIONS_INIT;
    char why[384];
    if (options != NULL && hidet_nccl__copy_sized(&opt, sizeof opt, options, "options", why, sizeof why) != 0)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s", why);
    double timeout;
    HN_CHECK(hidet_nccl__deadline_seconds(opt.timeout_s, "options->timeout_s", &timeout));
    hidet_nccl_bootstrap_h bs;
    HN_CHECK(hidet_nccl__bootstrap_create_timed(ops, params, timeout, &bs));
    return comm_init_then_release(bs, &opt, comm_id);
}

/* The zero-argument start of an application launched by hidet-nccl-run, by Slurm with a
 * rendezvous directory, or with HIDET_NCCL_BOOTSTRAP naming a plug-in. */
hidet_nccl_status_t hidet_nccl_init(int *comm_id) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(comm_id);
    hidet_nccl_bootstrap_h bs;
    HN_CHECK(hidet_nccl_bootstrap_from_env(&bs));
    return comm_init_then_release(bs, NULL, comm_id);
}
