/* Internal: NCCL version codes (core/nccl_version.c). */
#ifndef HIDET_NCCL_CORE_NCCL_VERSION_INT_H_
#define HIDET_NCCL_CORE_NCCL_VERSION_INT_H_

#include "core/nccl_loader_int.h"

int hidet_nccl__version_major(int code);
int hidet_nccl__version_minor(int code);
int hidet_nccl__version_patch(int code);
/* Any ncclGetVersion code as X*10000+Y*100+Z (2.8.4: 2804 -> 20804). */
int hidet_nccl__version_normalize(int code);

/* HIDET_NCCL_ERROR_UNSUPPORTED naming what needs which version (and call, the NCCL function)
 * unless the loaded NCCL has fn and is at least min_version (X*10000+Y*100+Z). */
hidet_nccl_status_t hidet_nccl__needs(const hn_nccl_t *n, const void *fn, int min_version, const char *what,
                                      const char *call);

#endif
