/* hidet_nccl_barrier: a stream-ordered barrier, as an all_reduce of one byte in a device
 * buffer each communicator keeps (made at its first barrier, freed at finalize). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/coll/collective_int.h"
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"
#include "core/base/finalize_hooks_int.h"

typedef struct scratch {
    struct scratch *next;
    int comm_id;
    ncclComm_t comm;
    void *byte; /* one byte of device memory on the communicator's GPU */
} scratch_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static scratch_t *g_scratch;

static void free_all(void) {
    pthread_mutex_lock(&g_lock);
    for (scratch_t *s = g_scratch, *next; s != NULL; s = next) {
        next = s->next;
        cudaFree(s->byte);
        free(s);
    }
    g_scratch = NULL;
    pthread_mutex_unlock(&g_lock);
}

/* Communicator c's byte, made on its GPU at the first barrier (in relaxed capture mode, so
 * that a first barrier inside a CUDA graph capture may make it). */
static hidet_nccl_status_t scratch_of(const hn_coll_t *c, void **byte) {
    pthread_mutex_lock(&g_lock);
    scratch_t *s = g_scratch;
    while (s != NULL && !(s->comm_id == c->id && s->comm == c->comm)) s = s->next;
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (s == NULL) {
        int device = -1, before = -1;
        ncclResult_t r = c->n->CommCuDevice(c->comm, &device);
        enum cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
        cudaError_t e = cudaSuccess;
        void *p = NULL;
        if (r == ncclSuccess) {
            cudaGetDevice(&before);
            cudaThreadExchangeStreamCaptureMode(&mode);
            e = cudaSetDevice(device);
            if (e == cudaSuccess) e = cudaMalloc(&p, 1);
            cudaThreadExchangeStreamCaptureMode(&mode);
            if (before >= 0) cudaSetDevice(before);
        }
        s = r == ncclSuccess && e == cudaSuccess ? calloc(1, sizeof *s) : NULL;
        if (s != NULL) {
            *s = (scratch_t){g_scratch, c->id, c->comm, p};
            g_scratch = s;
            hidet_nccl__at_finalize(free_all);
        } else if (r != ncclSuccess) {
            st = hidet_nccl__nccl_fail("hidet_nccl_barrier", "ncclCommCuDevice", r, c->comm);
        } else if (e != cudaSuccess) {
            st = hidet_nccl__cuda_fail("hidet_nccl_barrier", "cudaMalloc of the barrier's byte", e);
        } else {
            cudaFree(p);
            st = HN_FAIL(HIDET_NCCL_ERROR_SYSTEM, "out of memory");
        }
    }
    if (s != NULL) *byte = s->byte;
    pthread_mutex_unlock(&g_lock);
    return st;
}

hidet_nccl_status_t hidet_nccl_barrier(int comm_id, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    void *byte = NULL;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "barrier", stream, &c));
    HN_CHECK(scratch_of(&c, &byte));
    ncclResult_t r = c.n->AllReduce(byte, byte, 1, ncclUint8, ncclMax, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclAllReduce (barrier)", 1, HIDET_NCCL_UINT8, NULL, 0);
}
