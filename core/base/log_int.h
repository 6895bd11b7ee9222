/* Internal: the core's side of logging (the macros are in core/base/kit.h). */
#ifndef HIDET_NCCL_CORE_BASE_LOG_INT_H_
#define HIDET_NCCL_CORE_BASE_LOG_INT_H_

#include "core/base/kit.h"

/* The rank shown in the prefix (from the first communicator or bootstrap that knows it;
 * until then the launcher's). */
void hidet_nccl__log_set_rank(int rank);

#endif
