/* Internal: awaiting non-blocking NCCL communicators against a deadline (core/comm/wait.c). */
#ifndef HIDET_NCCL_CORE_COMM_WAIT_INT_H_
#define HIDET_NCCL_CORE_COMM_WAIT_INT_H_

#include "core/nccl/nccl_loader_int.h"

/* Polls ncclCommGetAsyncError on comms[0..n-1] (NULL entries skipped) until none is
 * ncclInProgress. On an NCCL error or at the deadline, and if abort_on_failure, every
 * communicator of the list is aborted and its entry set to NULL. `what` names what is
 * awaited, for the message. */
hidet_nccl_status_t hidet_nccl__await(const hn_nccl_t *nccl, ncclComm_t *comms, int n,
                                      double timeout_s, int abort_on_failure, const char *what);

#endif
