/* Internal: choosing a rank's GPU (order in include/hidet_nccl/bootstrap.h; core/comm/device_select.c). */
#ifndef HIDET_NCCL_CORE_COMM_DEVICE_SELECT_INT_H_
#define HIDET_NCCL_CORE_COMM_DEVICE_SELECT_INT_H_

#include "hidet_nccl/bootstrap.h"

/* Picks and sets the device: requested >= 0, HIDET_NCCL_DEVICE_CURRENT, or AUTO (the
 * launchers' local-rank variables, then bootstrap_local_rank if >= 0), modulo the count. */
hidet_nccl_status_t hidet_nccl__select_device(int requested, int bootstrap_local_rank, int *device);

#endif
