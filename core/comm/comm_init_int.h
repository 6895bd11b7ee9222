/* Internal: owned communicators from a unique id (core/comm/comm_init.c). */
#ifndef HIDET_NCCL_CORE_COMM_COMM_INIT_INT_H_
#define HIDET_NCCL_CORE_COMM_COMM_INIT_INT_H_

#include <nccl.h>

#include "core/nccl/nccl_config_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* One rank's owned communicator on the current device, awaited up to timeout seconds, from
 * the id of one root (nids 1) or of several (ncclCommInitRankScalable, NCCL 2.23), with
 * NCCL's knobs (NULL: NCCL's defaults; checked by hidet_nccl__knobs_from). */
hidet_nccl_status_t hidet_nccl__init_rank(int nranks, const ncclUniqueId *ids, int nids, int rank, double timeout,
                                          const hn_knobs_t *knobs, int *comm_id);

/* Whether communicators are made blocking: yes unless HIDET_NCCL_NONBLOCKING=1. A bad value
 * of the setting is an error. */
hidet_nccl_status_t hidet_nccl__want_blocking(int *blocking);

#endif
