/* Internal: splits with NCCL's splitShare (core/comm/comm_split.c). */
#ifndef HIDET_NCCL_CORE_COMM_COMM_SPLIT_INT_H_
#define HIDET_NCCL_CORE_COMM_COMM_SPLIT_INT_H_

#include "hidet_nccl/bootstrap.h"

/* hidet_nccl_comm_split with ncclConfig_t's splitShare set to share (HIDET_NCCL_UNSET: NCCL's
 * default; 1: the child shares the parent's channels and buffers). */
hidet_nccl_status_t hidet_nccl__comm_split(int comm_id, int color, int key, int share, int *new_id);

#endif
