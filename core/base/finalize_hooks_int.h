/* Internal: running the work hidet_nccl_finalize() does for optional parts (e.g. the MPI
 * archive finalizing an MPI it initialized), which those parts register with
 * hidet_nccl__at_finalize (core/base/kit.h). */
#ifndef HIDET_NCCL_CORE_BASE_FINALIZE_HOOKS_INT_H_
#define HIDET_NCCL_CORE_BASE_FINALIZE_HOOKS_INT_H_

#include "core/base/kit.h"

/* Runs the hooks (core/comm/comm_destroy.c calls it). */
void hidet_nccl__run_finalize_hooks(void);

#endif
