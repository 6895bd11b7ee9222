/* The CUDA driver functions of core/nccl/cuda_driver_int.h, found through the runtime. */
#include <pthread.h>
#include <stdio.h>

#include <cuda_runtime_api.h>

#include "core/base/status_int.h"
#include "core/nccl/cuda_driver_int.h"

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static hn_driver_t g_driver;
static char g_missing[160]; /* empty: every function found */

static void find(void **fn, const char *name, int version) {
    if (g_missing[0] != '\0') return;
    enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    cudaError_t e = cudaGetDriverEntryPointByVersion(name, fn, (unsigned)version, cudaEnableDefault, &q);
    if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || *fn == NULL)
        snprintf(g_missing, sizeof g_missing, "%s (version %d: cudaError_t %d, query result %d)", name, version, (int)e,
                 (int)q);
}

static void find_all(void) {
    find((void **)&g_driver.ModuleLoadData, "cuModuleLoadData", 2000);
    find((void **)&g_driver.ModuleGetFunction, "cuModuleGetFunction", 2000);
    find((void **)&g_driver.LaunchKernel, "cuLaunchKernel", 4000);
    find((void **)&g_driver.GetErrorString, "cuGetErrorString", 6000);
}

hidet_nccl_status_t hidet_nccl__driver(const hn_driver_t **out) {
    pthread_once(&g_once, find_all);
    if (g_missing[0] != '\0')
        return HN_FAIL(HIDET_NCCL_ERROR_CUDA, "the CUDA driver function %s was not found (the driver is too old or "
                       "no GPU is visible)", g_missing);
    *out = &g_driver;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__driver_fail(const hn_driver_t *d, const char *func, const char *call, CUresult r) {
    const char *s = NULL;
    if (d->GetErrorString(r, &s) != CUDA_SUCCESS || s == NULL) s = "unknown error";
    return hidet_nccl__fail(HIDET_NCCL_ERROR_CUDA, func, "%s failed: %s (CUresult %d)", call, s, (int)r);
}
