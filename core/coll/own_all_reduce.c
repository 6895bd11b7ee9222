/* The own all_reduce kernels' host side: which calls they take (the reason only when asked:
 * a fallback costs a few comparisons), and the launch (the kernels were loaded on the device
 * when the workspaces were made: core/mem/own_module.c). */
#include <stdio.h>

#include "core/base/status_int.h"
#include "core/coll/own_all_reduce_int.h"
#include "core/mem/mem_own_int.h"
#include "core/mem/own_module_int.h"
#include "core/nccl/cuda_driver_int.h"
#include "core/nccl/cuda_int.h"
#include "core/nccl/dtype_int.h"

hn_view_t hidet_nccl__own_view(const struct hn_own *own, size_t bytes) {
    return own != NULL && own->nranks > 2 && bytes > HN_OWN_ONE_SHOT_MAX ? HN_VIEW_OWN2 : HN_VIEW_OWN1;
}

int hidet_nccl__own_takes(const hn_coll_t *c, hidet_nccl_dtype_t dtype, const hidet_nccl_reduction_t *red,
                          size_t bytes, char *why, size_t why_len) {
    if (why != NULL) why[0] = '\0';
    if (!hidet_nccl__view_is_own(c->view)) return 0;
    int order_only = 0, op = (int)red->nccl_op;
    int t = hidet_nccl__own_type(red->nccl_dtype, &order_only);
    int cannot = c->own == NULL, grouped = c->in_group, large = bytes > HN_OWN_STAGE_BYTES;
    int type = t < 0 || op < 0 || op >= HN_OWN_NUM_OPS, rounds = !type && order_only && op != ncclMax && op != ncclMin;
    if (!(cannot || grouped || large || type || rounds)) return 1;
    if (why == NULL) return 0;
    if (cannot)
        snprintf(why, why_len, "they cannot run on this communicator: %s", c->own_why != NULL ? c->own_why : "?");
    else if (grouped)
        snprintf(why, why_len, "the call is inside a group (they are not part of NCCL's groups)");
    else if (large)
        snprintf(why, why_len, "%zu bytes are more than their staging (%u bytes)", bytes, HN_OWN_STAGE_BYTES);
    else if (type)
        snprintf(why, why_len, "they do not reduce %s with %s", hidet_nccl__dtype_str(dtype),
                 hidet_nccl__own_op_name(op));
    else
        snprintf(why, why_len, "they reduce %s by max and min only (exact); a %s would round",
                 hidet_nccl__dtype_str(dtype), hidet_nccl__own_op_name(op));
    return 0;
}

/* After the communicator's last own kernel when that ran on another stream (NCCL orders a
 * communicator's calls too): the event recorded after it. A call being captured neither waits
 * nor records (CUDA allows no event across a capture's boundary): a graph's replays and eager
 * calls on other streams are the caller's to order. */
static void order_before(struct hn_own *o, cudaStream_t stream, int capturing) {
    if (!capturing && o->recorded && o->last_stream != stream && cudaStreamWaitEvent(stream, o->order, 0) != cudaSuccess)
        cudaGetLastError(); /* ours: the call goes on unordered, as a raw NCCL call on a new stream would */
}

static void order_after(struct hn_own *o, cudaStream_t stream, int capturing) {
    if (capturing) return;
    if (cudaEventRecord(o->order, stream) == cudaSuccess) {
        o->recorded = 1;
        o->last_stream = stream;
    } else {
        cudaGetLastError();
        o->recorded = 0;
    }
}

hidet_nccl_status_t hidet_nccl__own_all_reduce(const hn_coll_t *c, const void *sendbuff, void *recvbuff,
                                               size_t nccl_count, const hidet_nccl_reduction_t *red, size_t count,
                                               hidet_nccl_dtype_t dtype) {
    struct hn_own *o = c->own;
    const hn_driver_t *d;
    HN_CHECK(hidet_nccl__driver(&d));
    int order_only, algo = c->view == HN_VIEW_OWN2 ? 1 : 0, op = (int)red->nccl_op;
    int t = hidet_nccl__own_type(red->nccl_dtype, &order_only);
    enum cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(c->stream, &capture) != cudaSuccess) {
        cudaGetLastError();
        capture = cudaStreamCaptureStatusNone;
    }
    int capturing = capture != cudaStreamCaptureStatusNone;
    int previous = hidet_nccl__device_use(o->device);
    hn_own_args_t a = {sendbuff, recvbuff, nccl_count, {NULL}, o->abort_dev, o->rank, o->nranks};
    for (int p = 0; p < o->nranks; p++) a.ws[p] = o->ws[p];
    void *params[] = {&a};
    order_before(o, c->stream, capturing);
    CUresult r = d->LaunchKernel(hidet_nccl__own_kernel(o->device, algo, t, op), HN_OWN_BLOCKS, 1, 1, HN_OWN_THREADS,
                                 1, 1, 0, (CUstream)c->stream, params, NULL);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    if (r == CUDA_SUCCESS) {
        order_after(o, c->stream, capturing);
    } else {
        char name[64], call[96];
        hidet_nccl__own_kernel_name(algo, t, op, name, sizeof name);
        snprintf(call, sizeof call, "cuLaunchKernel of %s", name);
        st = hidet_nccl__driver_fail(d, c->name, call, r);
    }
    hidet_nccl__device_back(previous, o->device);
    HN_CHECK(st);
    return hidet_nccl__coll_end(c, ncclSuccess, algo ? "own two-shot" : "own one-shot", count, dtype, NULL, 0);
}
