/* Host time per call on a GPU machine: the library's all_gather and all_reduce against raw
 * ncclAllGather on the communicator and on each sibling an AUTO registration made, one rank,
 * in place, 8 bytes: calls NCCL does nothing for (one rank, in place), so what is timed is
 * the host's work per call, back to back. The library's one-rank in-place all_reduce skips
 * NCCL: that row is the library's whole cost.
 *   hidet-nccl-run -n 1 host_cost_probe        (HIDET_NCCL_TUNE_FILE: which siblings AUTO makes)
 * Three repetitions of every row, microseconds per call. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hidet_nccl/bootstrap.h"
#include "hidet_nccl/hidet_nccl.h"

#define HN(call)                                                                                                       \
    do {                                                                                                               \
        if ((call) != HIDET_NCCL_SUCCESS) {                                                                            \
            fprintf(stderr, "%s: %s\n", #call, hidet_nccl_last_error());                                               \
            exit(1);                                                                                                   \
        }                                                                                                              \
    } while (0)

#define CALLS 20000
#define MAX_SIBLINGS 4

typedef ncclResult_t (*all_gather_fn)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void row(const char *what, double start, cudaStream_t s) {
    if (cudaStreamSynchronize(s) != cudaSuccess) exit(1);
    printf("%-52s %.3f us\n", what, (now() - start) / CALLS * 1e6);
}

int main(void) {
    int id;
    HN(hidet_nccl_init(&id));
    cudaStream_t s;
    if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess) return 1;
    const char *path;
    HN(hidet_nccl_library_path(&path));
    void *nccl = dlopen(path, RTLD_NOW | RTLD_NOLOAD); /* the NCCL the library loaded */
    all_gather_fn all_gather = nccl != NULL ? (all_gather_fn)(void (*)(void))dlsym(nccl, "ncclAllGather") : NULL;
    if (all_gather == NULL) {
        fprintf(stderr, "ncclAllGather not found in %s\n", path);
        return 1;
    }
    void *mem, *plain;
    HN(hidet_nccl_mem_alloc(id, 1 << 20, &mem));
    if (cudaMalloc(&plain, 1 << 20) != cudaSuccess) return 1;
    int before, after, handle;
    HN(hidet_nccl_comm_count(&before));
    HN(hidet_nccl_register(id, mem, 1 << 20, HIDET_NCCL_REGISTER_AUTO, &handle));
    HN(hidet_nccl_comm_count(&after)); /* the siblings are the ids it handed out */
    ncclComm_t comm, siblings[MAX_SIBLINGS];
    int n = after - before < MAX_SIBLINGS ? after - before : MAX_SIBLINGS;
    HN(hidet_nccl_get_comm(id, &comm));
    for (int k = 0; k < n; k++) HN(hidet_nccl_get_comm(before + k, &siblings[k]));
    printf("# %d siblings; %d calls per row\n", n, CALLS);
    for (int rep = 0; rep < 3; rep++) {
        double t = now();
        for (int i = 0; i < CALLS; i++) HN(hidet_nccl_all_gather(id, mem, mem, 2, HIDET_NCCL_FLOAT32, s));
        row("library all_gather, library memory (routed)", t, s);
        t = now();
        for (int i = 0; i < CALLS; i++) HN(hidet_nccl_all_gather(id, plain, plain, 2, HIDET_NCCL_FLOAT32, s));
        row("library all_gather, cudaMalloc memory", t, s);
        t = now();
        for (int i = 0; i < CALLS; i++) all_gather(mem, mem, 2, ncclUint32, comm, s);
        row("raw ncclAllGather, its communicator", t, s);
        for (int k = 0; k < n; k++) {
            char what[64];
            snprintf(what, sizeof what, "raw ncclAllGather, sibling %d", k);
            t = now();
            for (int i = 0; i < CALLS; i++) all_gather(mem, mem, 2, ncclUint32, siblings[k], s);
            row(what, t, s);
        }
        t = now();
        for (int i = 0; i < CALLS; i++)
            HN(hidet_nccl_all_reduce(id, mem, mem, 2, HIDET_NCCL_FLOAT32, HIDET_NCCL_SUM, s));
        row("library all_reduce, library memory (skips NCCL)", t, s);
    }
    HN(hidet_nccl_deregister(id, handle));
    HN(hidet_nccl_mem_free(mem));
    cudaFree(plain);
    HN(hidet_nccl_finalize());
    return 0;
}
