/* Internal: version 1 plug-ins seen as version 2 (core/boot/bootstrap_v1.c). */
#ifndef HIDET_NCCL_CORE_BOOT_BOOTSTRAP_V1_INT_H_
#define HIDET_NCCL_CORE_BOOT_BOOTSTRAP_V1_INT_H_

#include "hidet_nccl/bootstrap.h"

/* A version 1 plug-in as a version 2 one: the adapter's init takes
 * an hn_v1_params_t. Its allgather is the plug-in's, or one broadcast from each rank. */
typedef struct {
    const hidet_nccl_bootstrap_v1_t *v1;
    const void *params;
} hn_v1_params_t;
extern const hidet_nccl_bootstrap_t hidet_nccl__bootstrap_v1_adapter;

#endif
