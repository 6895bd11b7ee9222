/* Internal: applying a communicator's error policy (core/comm_health.c). */
#ifndef HIDET_NCCL_CORE_HEALTH_INT_H_
#define HIDET_NCCL_CORE_HEALTH_INT_H_

#include "hidet_nccl/hidet_nccl.h"

/* After communicator `id` failed with st (its message set): with the policy ABORT_PROCESS,
 * prints the message and aborts the process; with ABORT_COMM, or always_abort, aborts an
 * owned communicator and kills its id (later uses say "communicator id N was <why>").
 * Returns st. */
hidet_nccl_status_t hidet_nccl__comm_failed(int id, hidet_nccl_status_t st, int always_abort, const char *why);

#endif
