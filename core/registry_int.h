/* Internal: the process-wide table of communicator slots (core/registry.c). Ids index the
 * table; a slot is never reused until the table is emptied by finalize, or renumbered by a
 * set_comms that finds nothing else live. */
#ifndef HIDET_NCCL_CORE_REGISTRY_INT_H_
#define HIDET_NCCL_CORE_REGISTRY_INT_H_

#include <nccl.h>

#include "hidet_nccl/hidet_nccl.h"

/* Adds a live communicator, owned (made by the library) or borrowed; *id is its new id. A
 * NULL comm reserves a pending id, which every use refuses as not ready until
 * hidet_nccl__registry_fill. */
hidet_nccl_status_t hidet_nccl__registry_add(ncclComm_t comm, int owned, int nranks, int *id);
/* Gives a pending id its communicator; NULL (a failed split) marks it dead. */
void hidet_nccl__registry_fill(int id, ncclComm_t comm, int nranks);
/* The communicator of a live id, whether the library owns it, and its number of ranks (0 if
 * unknown: a borrowed communicator); owned and nranks may be NULL. A clear error for any
 * other id. */
hidet_nccl_status_t hidet_nccl__registry_lookup(int id, ncclComm_t *comm, int *owned, int *nranks);
/* Marks a live id dead and returns what it held; later uses of the id say "communicator id
 * N was <why>" (why NULL: "destroyed"). */
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

#endif
