/* CUDA runtime calls the core needs, with their failures turned into messages. */
#include "core/nccl/cuda_int.h"
#include "core/base/status_int.h"

HN_COLD hidet_nccl_status_t hidet_nccl__cuda_fail(const char *func, const char *call, cudaError_t e) {
    const char *hint = (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
                           ? ". No usable GPU is visible to this process (check nvidia-smi and CUDA_VISIBLE_DEVICES)"
                           : "";
    return hidet_nccl__fail(HIDET_NCCL_ERROR_CUDA, func, "%s failed: %s (cudaError_t %d)%s", call,
                            cudaGetErrorString(e), (int)e, hint);
}

int hidet_nccl__device_use(int device) {
    int previous = -1;
    cudaGetDevice(&previous);
    if (previous != device) cudaSetDevice(device);
    return previous;
}

void hidet_nccl__device_back(int previous, int device) {
    if (previous >= 0 && previous != device) cudaSetDevice(previous);
}

hidet_nccl_status_t hidet_nccl__current_device(int *device) {
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaGetDeviceCount", e);
    if (count == 0) return HN_FAIL(HIDET_NCCL_ERROR_CUDA, "no CUDA device is visible to this process");
    e = cudaGetDevice(device);
    if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaGetDevice", e);
    return HIDET_NCCL_SUCCESS;
}
