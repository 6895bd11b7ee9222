/* Internal: applying a communicator's error policy (core/comm/comm_health.c). */
#ifndef HIDET_NCCL_CORE_COMM_COMM_HEALTH_INT_H_
#define HIDET_NCCL_CORE_COMM_COMM_HEALTH_INT_H_

#include "hidet_nccl/hidet_nccl.h"

/* After communicator `id` failed with st (its message set) in `event` ("hidet_nccl_comm_wait
 * passed its deadline"): the flight recorder dumps (trace directory set); with the policy
 * ABORT_PROCESS, prints the message and aborts the process; with ABORT_COMM, aborts an owned
 * communicator and kills its id (later uses say "communicator id N was aborted after
 * <event>"). broken (the communicator cannot be trusted any more: comm_wait's failures)
 * under the policy RETURN: the id is marked failed when NCCL can shrink it (2.27), else
 * aborted as with ABORT_COMM. Returns st. */
hidet_nccl_status_t hidet_nccl__comm_failed(int id, hidet_nccl_status_t st, int broken, const char *event);

#endif
