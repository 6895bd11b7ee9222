/* Picking the GPU for a rank, before any other CUDA call that makes a context. */
#include <stdio.h>
#include <stdlib.h>

#include "core/cuda_int.h"
#include "core/device_select_int.h"
#include "core/error_int.h"
#include "core/log_int.h"

/* The local-rank variables of launchers, in the order they are trusted. */
static const char *const k_local_rank_vars[] = {"HIDET_NCCL_LOCAL_RANK",     "OMPI_COMM_WORLD_LOCAL_RANK",
                                                "MV2_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                                                "SLURM_LOCALID",             "PMI_LOCAL_RANK"};

int hidet_nccl__parse_nonneg_int(const char *s, int *out) {
    if (s == NULL || *s == '\0') return 0;
    char *end;
    long v = strtol(s, &end, 10);
    if (*end != '\0' || v < 0 || v > (1L << 30)) return 0;
    *out = (int)v;
    return 1;
}

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
    char label[96];
    if (requested >= 0) {
        if (requested >= count)
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "device %d is not one of the %d visible GPUs",
                           requested, count);
        local = requested;
        source = "the caller";
    }
    for (size_t i = 0; source == NULL && i < sizeof k_local_rank_vars / sizeof k_local_rank_vars[0]; i++) {
        const char *v = getenv(k_local_rank_vars[i]);
        if (v == NULL) continue;
        if (!hidet_nccl__parse_nonneg_int(v, &local))
            return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s='%.64s' is not a non-negative integer",
                           k_local_rank_vars[i], v);
        snprintf(label, sizeof label, "$%s", k_local_rank_vars[i]);
        source = label;
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
