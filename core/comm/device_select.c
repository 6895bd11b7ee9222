/* Picking the GPU for a rank, before any other CUDA call that makes a context. */
#include <stdio.h>

#include "core/nccl/cuda_int.h"
#include "core/comm/device_select_int.h"
#include "core/base/status_int.h"
#include "core/base/log_int.h"
#include "core/base/settings_int.h"

hidet_nccl_status_t hidet_nccl__select_device(int requested, int bootstrap_local_rank, int *device) {
    if (requested == HIDET_NCCL_DEVICE_CURRENT) return hidet_nccl__current_device(device);
    if (requested < HIDET_NCCL_DEVICE_CURRENT)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "device %d is not a GPU index, HIDET_NCCL_DEVICE_AUTO or HIDET_NCCL_DEVICE_CURRENT", requested);
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaGetDeviceCount", e);
    if (count == 0) return HN_FAIL(HIDET_NCCL_ERROR_CUDA, "no CUDA device is visible to this process");
    int local = -1;
    const char *source = NULL;
    char label[128];
    if (requested >= 0) {
        if (requested >= count)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device %d is not one of the %d visible GPUs",
                           requested, count);
        local = requested;
        source = "the caller";
    }
    if (source == NULL) { /* the launchers' local-rank variables, in the one order (core/base/settings.c) */
        hn_hints_t hints;
        HN_CHECK(hidet_nccl__launcher_hints(&hints));
        if (hints.local_rank >= 0) {
            local = hints.local_rank;
            snprintf(label, sizeof label, "%s", hints.local_source);
            source = label;
        }
    }
    if (source == NULL && bootstrap_local_rank >= 0) {
        local = bootstrap_local_rank;
        source = "the bootstrap's local rank";
    }
    if (source == NULL) {
        local = 0;
        source = "nothing (no local rank known)";
    }
    *device = local % count;
    e = cudaSetDevice(*device);
    if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaSetDevice", e);
    HN_INFO("GPU %d of %d chosen from %s (local rank %d)", *device, count, source, local);
    return HIDET_NCCL_SUCCESS;
}
