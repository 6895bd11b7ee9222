/* Internal: deadlines and polling of non-blocking NCCL communicators. */
#ifndef HIDET_NCCL_CORE_WAIT_INT_H_
#define HIDET_NCCL_CORE_WAIT_INT_H_

#include "core/nccl_loader_int.h"

/* $HIDET_NCCL_TIMEOUT in seconds (default 300); a bad value is an error naming it. */
hidet_nccl_status_t hidet_nccl__timeout_seconds(double *seconds);

/* Monotonic seconds. */
double hidet_nccl__now(void);

/* One pause of a polling loop that has waited `waited` seconds: none while under spin_s
 * (what is awaited is probably about to be done), else a sleep of *sleep_ns, which then
 * doubles while under max_ns. */
void hidet_nccl__poll_pause(double waited, double spin_s, long *sleep_ns, long max_ns);

/* Polls ncclCommGetAsyncError on comms[0..n-1] (NULL entries skipped) until none is
 * ncclInProgress. On an NCCL error or at the deadline, and if abort_on_failure, every
 * communicator of the list is aborted and its entry set to NULL. `what` names what is
 * awaited, for the message. */
hidet_nccl_status_t hidet_nccl__await(const hn_nccl_t *nccl, ncclComm_t *comms, int n,
                                      double timeout_s, int abort_on_failure, const char *what);

/* Group bookkeeping of the calling thread (core/group.c). */
int hidet_nccl__group_depth(void);
/* Remembers a communicator used inside the current group, to await it at group_end. */
hidet_nccl_status_t hidet_nccl__group_track(ncclComm_t comm);
/* Remembers a split inside the current group: at group_end, *child (malloc'ed, freed
 * there) is awaited and registered under the pending id. */
hidet_nccl_status_t hidet_nccl__group_add_split(int id, ncclComm_t *child);

#endif
