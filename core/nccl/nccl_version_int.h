/* Internal: NCCL version codes (core/nccl/nccl_version.c). */
#ifndef HIDET_NCCL_CORE_NCCL_NCCL_VERSION_INT_H_
#define HIDET_NCCL_CORE_NCCL_NCCL_VERSION_INT_H_

int hidet_nccl__version_major(int code);
int hidet_nccl__version_minor(int code);
int hidet_nccl__version_patch(int code);
/* Any ncclGetVersion code as X*10000+Y*100+Z (2.8.4: 2804 -> 20804). */
int hidet_nccl__version_normalize(int code);

#endif
