/* The own kernels' module: the fatbin the archive carries (core/mem/own_kernels.cu, made by
 * core/BUILD) loaded through the CUDA driver once per device, every kernel looked up then, so
 * that a GPU the fatbin cannot run is known when the workspaces are made, on every rank. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/base/status_int.h"
#include "core/mem/own_module_int.h"
#include "core/nccl/cuda_driver_int.h"

extern const unsigned char hidet_nccl__own_fatbin[];
extern const size_t hidet_nccl__own_fatbin_size;

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
static const char *const k_ops[HN_OWN_NUM_OPS] = {"sum", "prod", "max", "min", "avg"};
#define MAX_DEVICES 64

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_int g_loaded[MAX_DEVICES];
static CUfunction g_fn[MAX_DEVICES][2][NUM_TYPES][HN_OWN_NUM_OPS];

int hidet_nccl__own_type(ncclDataType_t type, int *order_only) {
    for (int i = 0; i < NUM_TYPES; i++)
        if (k_types[i].type == type) {
            *order_only = k_types[i].order_only;
            return i;
        }
    return -1;
}

const char *hidet_nccl__own_op_name(int op) { return op >= 0 && op < HN_OWN_NUM_OPS ? k_ops[op] : "?"; }

void hidet_nccl__own_kernel_name(int algo, int t, int op, char *name, size_t len) {
    snprintf(name, len, "hn_own%d_%s_%s", algo + 1, k_types[t].name, k_ops[op]);
}

static int load_locked(int device, char *why, size_t why_len) {
    const hn_driver_t *d;
    if (hidet_nccl__driver(&d) != HIDET_NCCL_SUCCESS) {
        snprintf(why, why_len, "%s", hidet_nccl__error_detail());
        return -1;
    }
    CUmodule module;
    CUresult r = d->ModuleLoadData(&module, hidet_nccl__own_fatbin);
    const char *s = NULL;
    if (r != CUDA_SUCCESS) {
        if (d->GetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) s = "unknown error";
        snprintf(why, why_len, "cuModuleLoadData of their fatbin (sm_80, sm_90, compute_90 PTX; %zu bytes) on device "
                 "%d failed: %s (CUresult %d)", hidet_nccl__own_fatbin_size, device, s, (int)r);
        return -1;
    }
    for (int algo = 0; algo < 2; algo++)
        for (int t = 0; t < NUM_TYPES; t++)
            for (int op = 0; op < HN_OWN_NUM_OPS; op++) {
                if (k_types[t].order_only && op != ncclMax && op != ncclMin) continue;
                char name[64];
                hidet_nccl__own_kernel_name(algo, t, op, name, sizeof name);
                r = d->ModuleGetFunction(&g_fn[device][algo][t][op], module, name);
                if (r != CUDA_SUCCESS) {
                    if (d->GetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) s = "unknown error";
                    snprintf(why, why_len, "cuModuleGetFunction(%s) failed: %s (CUresult %d)", name, s, (int)r);
                    return -1; /* the module stays loaded: a broken archive, not worth a retry */
                }
            }
    return 0;
}

int hidet_nccl__own_load(int device, char *why, size_t why_len) {
    if (device < 0 || device >= MAX_DEVICES) {
        snprintf(why, why_len, "device ordinal %d is past the %d the own kernels keep", device, MAX_DEVICES);
        return -1;
    }
    if (atomic_load(&g_loaded[device])) return 0;
    pthread_mutex_lock(&g_lock);
    int rc = atomic_load(&g_loaded[device]) ? 0 : load_locked(device, why, why_len);
    if (rc == 0) atomic_store(&g_loaded[device], 1);
    pthread_mutex_unlock(&g_lock);
    return rc;
}

CUfunction hidet_nccl__own_kernel(int device, int algo, int t, int op) { return g_fn[device][algo][t][op]; }
