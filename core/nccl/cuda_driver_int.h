/* Internal: the few CUDA driver functions the own kernels need (a module loaded from the
 * archive's fatbin, its functions, a launch), found through the CUDA runtime's
 * cudaGetDriverEntryPointByVersion: the archive gains no link dependency on libcuda. */
#ifndef HIDET_NCCL_CORE_NCCL_CUDA_DRIVER_INT_H_
#define HIDET_NCCL_CORE_NCCL_CUDA_DRIVER_INT_H_

#include <cuda.h>

#include "hidet_nccl/hidet_nccl.h"

typedef struct {
    CUresult (*ModuleLoadData)(CUmodule *module, const void *image);
    CUresult (*ModuleGetFunction)(CUfunction *f, CUmodule module, const char *name);
    CUresult (*LaunchKernel)(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                             unsigned bz, unsigned shared, CUstream stream, void **params, void **extra);
    CUresult (*GetErrorString)(CUresult r, const char **s);
} hn_driver_t;

/* The driver's functions, found once (thread-safe); HIDET_NCCL_ERROR_CUDA naming the one
 * missing. */
hidet_nccl_status_t hidet_nccl__driver(const hn_driver_t **out);

/* "<call> failed: <the driver's string> (CUresult N)" into the thread's message. */
hidet_nccl_status_t hidet_nccl__driver_fail(const hn_driver_t *d, const char *func, const char *call, CUresult r);

#endif
