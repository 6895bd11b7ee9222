/* The own all_reduce kernels' workspaces: made at a communicator's first registration that
 * takes the kernels (collective), each rank's memory mapped on its peers by CUDA IPC with the
 * handles allgathered on the communicator itself; let go of when the communicator goes. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/base/log_int.h"
#include "core/base/settings_int.h"
#include "core/base/status_int.h"
#include "core/comm/blocking_call_int.h"
#include "core/comm/registry_int.h"
#include "core/mem/mem_own_int.h"
#include "core/mem/own_module_int.h"
#include "core/nccl/cuda_int.h"

/* What each rank tells the others, twice: whether it could make (then map) its workspace. */
typedef struct {
    int ok, device;
    char boot[40]; /* the host's boot id: ranks on one host, one boot, share it */
    cudaIpcMemHandle_t handle;
    char why[176];
} record_t;

/* An allgather of one record per rank, on the helper thread against the deadline. */
typedef struct {
    const hn_nccl_t *n;
    ncclComm_t comm;
    int nranks, rank;
    record_t *all; /* host, nranks records, this rank's filled in; the late helper frees it */
} gather_job_t;

static ncclResult_t run_gather(void *p) {
    gather_job_t *j = p;
    const size_t bytes = sizeof(record_t);
    char *dev = NULL;
    cudaStream_t s = NULL;
    ncclResult_t r = ncclUnhandledCudaError;
    if (cudaMalloc((void **)&dev, bytes * (size_t)j->nranks) != cudaSuccess) goto out;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) goto out; /* waits for no other work */
    if (cudaMemcpyAsync(dev + bytes * (size_t)j->rank, &j->all[j->rank], bytes, cudaMemcpyHostToDevice, s) !=
        cudaSuccess)
        goto out;
    r = j->n->AllGather(dev + bytes * (size_t)j->rank, dev, bytes, ncclUint8, j->comm, s);
    if (r != ncclSuccess) goto out;
    r = ncclUnhandledCudaError;
    if (cudaMemcpyAsync(j->all, dev, bytes * (size_t)j->nranks, cudaMemcpyDeviceToHost, s) != cudaSuccess) goto out;
    if (cudaStreamSynchronize(s) != cudaSuccess) goto out;
    r = ncclSuccess;
out:
    if (s != NULL) cudaStreamDestroy(s);
    if (dev != NULL) cudaFree(dev);
    return r;
}

static void late_gather(void *p, ncclResult_t r) {
    (void)r;
    free(((gather_job_t *)p)->all);
}

/* Every rank's record into *all (nranks of them, to free), mine at [rank]. */
static hidet_nccl_status_t exchange(const hn_nccl_t *n, ncclComm_t comm, int comm_id, int device, int rank, int nranks,
                                    const record_t *mine, record_t **all) {
    gather_job_t job = {n, comm, nranks, rank, calloc((size_t)nranks, sizeof(record_t))};
    if (job.all == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of host memory");
    job.all[rank] = *mine;
    double timeout;
    hidet_nccl_status_t st = hidet_nccl__timeout_seconds(&timeout);
    if (st != HIDET_NCCL_SUCCESS) {
        free(job.all);
        return st;
    }
    char what[160];
    snprintf(what, sizeof what, "the own kernels' workspaces exchanged on communicator id %d (every rank must register)",
             comm_id);
    ncclResult_t r = ncclSuccess;
    st = hidet_nccl__blocking_call(&(hn_blocking_call_t){run_gather, late_gather}, &job, sizeof job, device, timeout,
                                   what, &r);
    if (st == HIDET_NCCL_ERROR_TIMEOUT) hidet_nccl__registry_kill_stuck(comm_id, "the own kernels' exchange");
    if (st == HIDET_NCCL_ERROR_TIMEOUT) return st; /* the late helper frees job.all */
    if (st == HIDET_NCCL_SUCCESS && r != ncclSuccess) st = hidet_nccl__nccl_fail("hidet_nccl_register", what, r, comm);
    if (st != HIDET_NCCL_SUCCESS) {
        free(job.all);
        return st;
    }
    *all = job.all;
    return HIDET_NCCL_SUCCESS;
}

static void read_boot_id(char *out, size_t len) {
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (f == NULL || fgets(out, (int)len, f) == NULL) snprintf(out, len, "unknown");
    if (f != NULL) fclose(f);
    out[strcspn(out, "\n")] = '\0';
}

/* The first rank whose record is not ok, its reason into why; -1 when all are. */
static int first_failed(const record_t *all, int nranks, char *why, size_t why_len) {
    for (int p = 0; p < nranks; p++)
        if (!all[p].ok) {
            snprintf(why, why_len, "rank %d: %.*s", p, (int)sizeof all[p].why, all[p].why);
            return p;
        }
    return -1;
}

/* Workspaces let go of whose memory a peer may still map: freed when every peer is done. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static hn_own_t **g_held;
static int g_nheld, g_cap_held;

/* n words between host and device on a private stream (no other work waited for): 0 or -1. */
static int copy_words(void *to, const void *from, size_t n, enum cudaMemcpyKind kind) {
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return -1;
    int rc = cudaMemcpyAsync(to, from, n * sizeof(unsigned), kind, s) == cudaSuccess &&
                     cudaStreamSynchronize(s) == cudaSuccess
                 ? 0
                 : -1;
    cudaStreamDestroy(s);
    return rc;
}

/* What this rank made of o, and o (its peers' mappings closed already, or never opened). */
static void free_local(hn_own_t *o) {
    if (o->ws[o->rank] != NULL) cudaFree(o->ws[o->rank]);
    if (o->abort_host != NULL) cudaFreeHost(o->abort_host);
    if (o->order != NULL) cudaEventDestroy(o->order);
    free(o);
}

/* Frees o if every peer let go of its memory (1), else 0. Its device current. */
static int try_free(hn_own_t *o) {
    unsigned done[HN_OWN_MAX_RANKS] = {0};
    if (copy_words(done, o->ws[o->rank] + HN_OWN_DONE_OFFSET, HN_OWN_MAX_RANKS, cudaMemcpyDeviceToHost) != 0) {
        cudaGetLastError();
        return 0;
    }
    for (int p = 0; p < o->nranks; p++)
        if (done[p] != 1) return 0;
    free_local(o);
    return 1;
}

/* The held workspaces freed whose peers let go meanwhile (an aborted one is kept); the number
 * still held that were not aborted. */
static int sweep(void) {
    int left = 0;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < g_nheld;) {
        hn_own_t *o = g_held[i];
        int aborted = o->abort_host[0] != 0, freed = 0;
        if (!aborted) {
            int previous = hidet_nccl__device_use(o->device);
            freed = try_free(o);
            hidet_nccl__device_back(previous, o->device);
        }
        if (freed) {
            g_held[i] = g_held[--g_nheld];
        } else {
            left += !aborted;
            i++;
        }
    }
    pthread_mutex_unlock(&g_lock);
    return left;
}

static void hold(hn_own_t *o) {
    pthread_mutex_lock(&g_lock);
    if (g_nheld == g_cap_held) {
        int cap = g_cap_held ? 2 * g_cap_held : 8;
        hn_own_t **p = realloc(g_held, (size_t)cap * sizeof *p);
        if (p != NULL) {
            g_held = p;
            g_cap_held = cap;
        }
    }
    if (g_nheld < g_cap_held) g_held[g_nheld++] = o; /* else lost: its memory stays until the process ends */
    pthread_mutex_unlock(&g_lock);
}

/* Undoes what make did on this rank (no peer launched on it). */
static void unmake(hn_own_t *o) {
    for (int p = 0; p < o->nranks; p++)
        if (p != o->rank && o->ws[p] != NULL) cudaIpcCloseMemHandle(o->ws[p]);
    free_local(o);
}

/* This rank's workspace, zeroed where the kernels count, its IPC handle into mine. */
static void make_local(hn_own_t *o, record_t *mine) {
    cudaStream_t s = NULL;
    cudaError_t e = cudaMalloc((void **)&o->ws[o->rank], HN_OWN_WORKSPACE_BYTES);
    const char *call = "cudaMalloc of the workspace";
    if (e == cudaSuccess) {
        call = "cudaStreamCreateWithFlags";
        e = cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
    }
    if (e == cudaSuccess) {
        call = "cudaMemsetAsync of the workspace";
        e = cudaMemsetAsync(o->ws[o->rank], 0, HN_OWN_STAGE_OFFSET, s);
    }
    if (e == cudaSuccess) {
        call = "cudaStreamSynchronize";
        e = cudaStreamSynchronize(s);
    }
    if (s != NULL) cudaStreamDestroy(s);
    if (e == cudaSuccess) {
        call = "cudaIpcGetMemHandle";
        e = cudaIpcGetMemHandle(&mine->handle, o->ws[o->rank]);
    }
    if (e == cudaSuccess) {
        call = "cudaHostAlloc of the abort word";
        e = cudaHostAlloc((void **)&o->abort_host, sizeof(unsigned), cudaHostAllocMapped);
    }
    if (e == cudaSuccess) {
        o->abort_host[0] = 0;
        call = "cudaHostGetDevicePointer";
        e = cudaHostGetDevicePointer((void **)&o->abort_dev, o->abort_host, 0);
    }
    if (e == cudaSuccess) {
        call = "cudaEventCreateWithFlags";
        e = cudaEventCreateWithFlags(&o->order, cudaEventDisableTiming);
    }
    if (e != cudaSuccess) {
        mine->ok = 0;
        snprintf(mine->why, sizeof mine->why, "%s on device %d failed: %s (cudaError_t %d)", call, o->device,
                 cudaGetErrorString(e), (int)e);
        cudaGetLastError();
    }
}

/* The peers' workspaces mapped into o, the kernels loaded on its device (a failure into mine). */
static void map_peers(hn_own_t *o, const record_t *all, record_t *mine) {
    for (int p = 0; p < o->nranks && mine->ok; p++) {
        if (p == o->rank) continue;
        cudaIpcMemHandle_t h = all[p].handle;
        cudaError_t e = cudaIpcOpenMemHandle((void **)&o->ws[p], h, cudaIpcMemLazyEnablePeerAccess);
        if (e != cudaSuccess) {
            o->ws[p] = NULL;
            mine->ok = 0;
            snprintf(mine->why, sizeof mine->why,
                     "cudaIpcOpenMemHandle of rank %d's workspace (its device %d, this rank's %d) failed: %s "
                     "(cudaError_t %d); the own kernels need peer access between the ranks' GPUs",
                     p, all[p].device, o->device, cudaGetErrorString(e), (int)e);
            cudaGetLastError();
        }
    }
    if (mine->ok && hidet_nccl__own_load(o->device, mine->why, sizeof mine->why) != 0) mine->ok = 0;
}

hidet_nccl_status_t hidet_nccl__own_make(const hn_nccl_t *n, ncclComm_t comm, int comm_id, int rank, int nranks,
                                         hn_own_t **own, char *why, size_t why_len) {
    *own = NULL;
    why[0] = '\0';
    if (nranks < 2 || nranks > HN_OWN_MAX_RANKS) {
        snprintf(why, why_len, "the communicator has %d ranks; the own kernels run on 2 to %d", nranks,
                 HN_OWN_MAX_RANKS);
        return HIDET_NCCL_SUCCESS;
    }
    int device;
    ncclResult_t r = n->CommCuDevice(comm, &device);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail("hidet_nccl_register", "ncclCommCuDevice", r, comm);
    hn_own_t *o = calloc(1, sizeof *o);
    if (o == NULL) return HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of host memory");
    *o = (hn_own_t){.comm_id = comm_id, .device = device, .rank = rank, .nranks = nranks};
    record_t mine = {.ok = 1, .device = device};
    read_boot_id(mine.boot, sizeof mine.boot);
    int previous = hidet_nccl__device_use(device);
    int enabled = 1;
    hidet_nccl_status_t st = hidet_nccl__setting_int(HN_SETTING_OWN_KERNELS, &enabled);
    if (st != HIDET_NCCL_SUCCESS || !enabled) { /* still exchanged: every rank learns it */
        mine.ok = 0;
        snprintf(mine.why, sizeof mine.why, "%s",
                 st != HIDET_NCCL_SUCCESS ? hidet_nccl__error_detail() : "HIDET_NCCL_OWN_KERNELS=0 there");
    } else {
        make_local(o, &mine);
    }
    record_t *all = NULL;
    st = exchange(n, comm, comm_id, device, rank, nranks, &mine, &all);
    if (st == HIDET_NCCL_SUCCESS && first_failed(all, nranks, why, why_len) < 0) {
        for (int p = 0; p < nranks; p++)
            if (strncmp(all[p].boot, all[0].boot, sizeof all[p].boot) != 0) {
                snprintf(why, why_len, "rank %d is on another host than rank 0 (boot ids %.36s and %.36s); the own "
                         "kernels need every rank on one host", p, all[p].boot, all[0].boot);
                break;
            }
        if (why[0] == '\0') {
            map_peers(o, all, &mine);
            free(all);
            all = NULL;
            st = exchange(n, comm, comm_id, device, rank, nranks, &mine, &all);
            if (st == HIDET_NCCL_SUCCESS) first_failed(all, nranks, why, why_len);
        }
    }
    free(all);
    if (st != HIDET_NCCL_SUCCESS || why[0] != '\0') {
        unmake(o);
        hidet_nccl__device_back(previous, device);
        return st;
    }
    hidet_nccl__device_back(previous, device);
    *own = o;
    return HIDET_NCCL_SUCCESS;
}

/* Its kernels finished (the device synchronized), on a helper against the deadline. */
static ncclResult_t run_sync(void *p) {
    (void)p;
    return cudaDeviceSynchronize() == cudaSuccess ? ncclSuccess : ncclUnhandledCudaError;
}

void hidet_nccl__own_abort(hn_own_t *o) {
    if (o != NULL) ((volatile unsigned *)o->abort_host)[0] = 1;
}

void hidet_nccl__own_release(hn_own_t *o, int abandon) {
    if (o == NULL) return;
    double timeout = 300;
    hidet_nccl__timeout_seconds(&timeout);
    ncclResult_t r = ncclSuccess;
    int unused = 0;
    char what[128];
    snprintf(what, sizeof what, "the own kernels of communicator id %d to finish", o->comm_id);
    if (!abandon && o->abort_host[0] == 0 &&
        hidet_nccl__blocking_call(&(hn_blocking_call_t){run_sync, NULL}, &unused, sizeof unused, o->device, timeout,
                                  what, &r) !=
            HIDET_NCCL_SUCCESS) {
        HN_WARN("communicator id %d: %s; its own kernels were told to stop waiting and its workspace is kept",
                o->comm_id, hidet_nccl__error_detail());
        abandon = 1;
    }
    if (abandon || o->abort_host[0] != 0) { /* kernels may wait for peers that are gone: let them end, keep the memory */
        hidet_nccl__own_abort(o);
        hold(o);
        return;
    }
    int previous = hidet_nccl__device_use(o->device);
    const unsigned one = 1;
    for (int p = 0; p < o->nranks; p++) /* tell every rank, this one too, that it no longer reads them */
        copy_words(o->ws[p] + HN_OWN_DONE_OFFSET + (size_t)o->rank * sizeof one, &one, 1, cudaMemcpyHostToDevice);
    for (int p = 0; p < o->nranks; p++)
        if (p != o->rank) cudaIpcCloseMemHandle(o->ws[p]);
    cudaGetLastError();
    int freed = try_free(o);
    hidet_nccl__device_back(previous, o->device);
    if (!freed) hold(o);
    sweep();
}

void hidet_nccl__own_finalize(void) {
    double start = hidet_nccl__now();
    int left = sweep();
    while (left > 0 && hidet_nccl__now() - start < 2.0) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
        left = sweep();
    }
    if (left > 0) HN_INFO("finalize: %d own-kernel workspaces left allocated: a peer still maps them", left);
}
