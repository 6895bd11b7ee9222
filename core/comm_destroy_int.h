/* Internal: releasing one communicator id (core/comm_destroy.c). */
#ifndef HIDET_NCCL_CORE_COMM_DESTROY_INT_H_
#define HIDET_NCCL_CORE_COMM_DESTROY_INT_H_

#include "hidet_nccl/hidet_nccl.h"

/* hidet_nccl_comm_destroy without the public call's bookkeeping and without its library
 * memory step (for the siblings the memory tables own). */
hidet_nccl_status_t hidet_nccl__destroy_id(int comm_id);

#endif
