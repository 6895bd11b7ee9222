/* Internal: the process-wide table of communicator slots. Ids index the table; a slot is
 * never reused until the table is emptied by finalize or replaced by set_comms. */
#ifndef HIDET_NCCL_CORE_REGISTRY_INT_H_
#define HIDET_NCCL_CORE_REGISTRY_INT_H_

#include <nccl.h>

#include "hidet_nccl/hidet_nccl.h"

/* Adds a live communicator; *id is its new id. A NULL comm reserves a pending id, which
 * every use refuses as not ready until hidet_nccl__registry_fill. */
hidet_nccl_status_t hidet_nccl__registry_add(ncclComm_t comm, int owned, int nranks, int *id);
/* Gives a pending id its communicator; NULL (a failed split) marks it dead. */
void hidet_nccl__registry_fill(int id, ncclComm_t comm, int nranks);
/* The communicator of a live id (owned may be NULL); a clear error for any other id. */
hidet_nccl_status_t hidet_nccl__registry_get(int id, ncclComm_t *comm, int *owned);
/* Also the number of ranks (0 if unknown: a borrowed communicator). */
hidet_nccl_status_t hidet_nccl__registry_lookup(int id, ncclComm_t *comm, int *owned, int *nranks);
/* Marks a live id dead and returns what it held. */
hidet_nccl_status_t hidet_nccl__registry_remove(int id, ncclComm_t *comm, int *owned);
/* Likewise, and later uses of the id say "communicator id N was <why>". */
hidet_nccl_status_t hidet_nccl__registry_kill(int id, const char *why, ncclComm_t *comm, int *owned);
/* The error policy of a live id. */
hidet_nccl_status_t hidet_nccl__registry_policy(int id, hidet_nccl_error_policy_t *policy);
/* Empties the table. *slots (malloc'ed, caller frees) lists the n live slots. */
typedef struct {
    int id;
    int owned;
    ncclComm_t comm;
} hn_registered_t;
hidet_nccl_status_t hidet_nccl__registry_take_all(hn_registered_t **slots, int *n);

/* One rank's owned communicator on the current device, awaited up to timeout seconds
 * (core/comm_init.c). */
hidet_nccl_status_t hidet_nccl__init_rank(int nranks, const ncclUniqueId *id, int rank, double timeout,
                                          int *comm_id);

/* Whether communicators are made blocking: yes unless HIDET_NCCL_NONBLOCKING=1
 * (core/comm_init.c). */
int hidet_nccl__want_blocking(void);

#endif
