/* Internal: the core's side of logging (the macros are in core/kit.h). */
#ifndef HIDET_NCCL_CORE_LOG_INT_H_
#define HIDET_NCCL_CORE_LOG_INT_H_

#include "core/kit.h"

/* The rank shown in the prefix (from the first communicator or bootstrap that knows it;
 * until then the launcher's). */
void hidet_nccl__log_set_rank(int rank);

#endif
