/* Internal: CUDA runtime failures as library errors. */
#ifndef HIDET_NCCL_CORE_NCCL_CUDA_INT_H_
#define HIDET_NCCL_CORE_NCCL_CUDA_INT_H_

#include <cuda_runtime_api.h>

#include "hidet_nccl/hidet_nccl.h"

/* "<call> failed: <CUDA's string> (cudaError_t N)", and a hint when no GPU is visible. */
hidet_nccl_status_t hidet_nccl__cuda_fail(const char *func, const char *call, cudaError_t e);

/* The current device; HIDET_NCCL_ERROR_CUDA with "no CUDA device is visible" if none. */
hidet_nccl_status_t hidet_nccl__current_device(int *device);

/* Makes device current for a call that needs it; returns the caller's device (-1: none) for
 * hidet_nccl__device_back, which makes it current again. Failures are the next call's to see. */
int hidet_nccl__device_use(int device);
void hidet_nccl__device_back(int previous, int device);

#endif
