/* The own all_reduce kernels' host side: which calls they take, the module loaded per device
 * from the archive's fatbin (core/coll/own_kernels.cu; core/BUILD makes it), the launch. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "core/base/status_int.h"
#include "core/coll/own_all_reduce_int.h"
#include "core/comm/group_int.h"
#include "core/mem/mem_own_int.h"
#include "core/nccl/cuda_driver_int.h"
#include "core/nccl/cuda_int.h"
#include "core/nccl/dtype_int.h"

extern const unsigned char hidet_nccl__own_fatbin[];
extern const size_t hidet_nccl__own_fatbin_size;

/* The kernels, hn_own<1|2>_<type>_<op>: per NCCL type, whether it has every op or only max
 * and min (float8: the winner is an input, exact; a sum would round). */
typedef struct {
    ncclDataType_t type;
    const char *name;
    int order_only;
} own_type_t;

static const own_type_t k_types[] = {
    {ncclFloat32, "f32", 0},       {ncclFloat16, "f16", 0},       {ncclBfloat16, "bf16", 0}, {ncclInt32, "i32", 0},
    {ncclUint32, "u32", 0},        {ncclFloat8e4m3, "f8e4m3", 1}, {ncclFloat8e5m2, "f8e5m2", 1},
};
#define NUM_TYPES ((int)(sizeof k_types / sizeof k_types[0]))
static const char *const k_ops[] = {"sum", "prod", "max", "min", "avg"}; /* ncclSum .. ncclAvg */
#define NUM_OPS 5
#define MAX_DEVICES 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static CUmodule g_module[MAX_DEVICES];
static _Atomic(CUfunction) g_fn[MAX_DEVICES][2][NUM_TYPES][NUM_OPS];

hn_view_t hidet_nccl__own_view(const struct hn_own *own, size_t bytes) {
    return own != NULL && own->nranks > 2 && bytes > HN_OWN_ONE_SHOT_MAX ? HN_VIEW_OWN2 : HN_VIEW_OWN1;
}

static int type_index(ncclDataType_t t) {
    for (int i = 0; i < NUM_TYPES; i++)
        if (k_types[i].type == t) return i;
    return -1;
}

int hidet_nccl__own_takes(const hn_coll_t *c, hidet_nccl_dtype_t dtype, const hidet_nccl_reduction_t *red,
                          size_t bytes, char *why, size_t why_len) {
    why[0] = '\0';
    if (!hidet_nccl__view_is_own(c->view)) return 0;
    int t = type_index(red->nccl_dtype), op = (int)red->nccl_op;
    if (c->own == NULL)
        snprintf(why, why_len, "they cannot run on this communicator: %s", c->own_why != NULL ? c->own_why : "?");
    else if (hidet_nccl__group_depth() > 0)
        snprintf(why, why_len, "the call is inside a group (they are not part of NCCL's groups)");
    else if (!c->own_library)
        snprintf(why, why_len, "a buffer is not library memory (hidet_nccl_mem_alloc)");
    else if (bytes > HN_OWN_STAGE_BYTES)
        snprintf(why, why_len, "%zu bytes are more than their staging (%u bytes)", bytes, HN_OWN_STAGE_BYTES);
    else if (t < 0 || op < 0 || op >= NUM_OPS)
        snprintf(why, why_len, "they do not reduce %s with %s", hidet_nccl__dtype_str(dtype),
                 op >= 0 && op < NUM_OPS ? k_ops[op] : "this op");
    else if (k_types[t].order_only && op != ncclMax && op != ncclMin)
        snprintf(why, why_len, "they reduce %s by max and min only (exact); a %s would round",
                 hidet_nccl__dtype_str(dtype), k_ops[op]);
    return why[0] == '\0';
}

/* The kernel for (device, algo, type, op), the device's module loaded on first use. */
static hidet_nccl_status_t kernel(const hn_driver_t *d, int device, int algo, int t, int op, CUfunction *f) {
    if (device < 0 || device >= MAX_DEVICES)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "device ordinal %d is past the %d the own kernels keep", device,
                       MAX_DEVICES);
    *f = atomic_load_explicit(&g_fn[device][algo][t][op], memory_order_acquire);
    if (*f != NULL) return HIDET_NCCL_SUCCESS;
    char name[64];
    snprintf(name, sizeof name, "hn_own%d_%s_%s", algo + 1, k_types[t].name, k_ops[op]);
    hidet_nccl_status_t st = HIDET_NCCL_SUCCESS;
    pthread_mutex_lock(&g_lock);
    CUresult r = CUDA_SUCCESS;
    if (g_module[device] == NULL) {
        cudaFree(NULL); /* the device's primary context made current for the driver */
        r = d->ModuleLoadData(&g_module[device], hidet_nccl__own_fatbin);
        if (r != CUDA_SUCCESS) {
            g_module[device] = NULL;
            st = hidet_nccl__driver_fail(d, __func__, "cuModuleLoadData of the own kernels' fatbin (sm_80, sm_90, "
                                         "compute_90)", r);
        }
    }
    if (st == HIDET_NCCL_SUCCESS) {
        r = d->ModuleGetFunction(f, g_module[device], name);
        if (r != CUDA_SUCCESS)
            st = hidet_nccl__driver_fail(d, __func__, name, r);
        else
            atomic_store_explicit(&g_fn[device][algo][t][op], *f, memory_order_release);
    }
    pthread_mutex_unlock(&g_lock);
    return st;
}

/* After the communicator's last own kernel when that ran on another stream (as NCCL orders a
 * communicator's calls): not across a graph capture's boundary, where an event cannot wait. */
static void after_last(struct hn_own *o, cudaStream_t stream) {
    if (o->launched && o->last_stream != stream) {
        enum cudaStreamCaptureStatus a = cudaStreamCaptureStatusNone, b = cudaStreamCaptureStatusNone;
        cudaStreamIsCapturing(o->last_stream, &a);
        cudaStreamIsCapturing(stream, &b);
        if (a == cudaStreamCaptureStatusNone && b == cudaStreamCaptureStatusNone &&
            cudaEventRecord(o->order, o->last_stream) == cudaSuccess)
            cudaStreamWaitEvent(stream, o->order, 0);
        cudaGetLastError();
    }
    o->last_stream = stream;
    o->launched = 1;
}

hidet_nccl_status_t hidet_nccl__own_all_reduce(const hn_coll_t *c, const void *sendbuff, void *recvbuff,
                                               size_t nccl_count, const hidet_nccl_reduction_t *red, size_t count,
                                               hidet_nccl_dtype_t dtype) {
    struct hn_own *o = c->own;
    const hn_driver_t *d;
    HN_CHECK(hidet_nccl__driver(&d));
    int algo = c->view == HN_VIEW_OWN2 ? 1 : 0, t = type_index(red->nccl_dtype), op = (int)red->nccl_op;
    int previous = hidet_nccl__device_use(o->device);
    CUfunction f;
    hidet_nccl_status_t st = kernel(d, o->device, algo, t, op, &f);
    if (st == HIDET_NCCL_SUCCESS) {
        hn_own_args_t a = {sendbuff, recvbuff, nccl_count, {NULL}, o->abort_dev, o->rank, o->nranks};
        for (int p = 0; p < o->nranks; p++) a.ws[p] = o->ws[p];
        void *params[] = {&a};
        after_last(o, c->stream);
        CUresult r = d->LaunchKernel(f, HN_OWN_BLOCKS, 1, 1, HN_OWN_THREADS, 1, 1, 0, (CUstream)c->stream, params, NULL);
        if (r != CUDA_SUCCESS) {
            char call[96];
            snprintf(call, sizeof call, "cuLaunchKernel of hn_own%d_%s_%s", algo + 1, k_types[t].name, k_ops[op]);
            st = hidet_nccl__driver_fail(d, c->name, call, r);
        }
    }
    hidet_nccl__device_back(previous, o->device);
    HN_CHECK(st);
    return hidet_nccl__coll_end(c, ncclSuccess, algo ? "own two-shot" : "own one-shot", count, dtype, NULL, 0);
}
