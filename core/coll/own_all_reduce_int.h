/* Internal: the own all_reduce kernels' host side (core/coll/own_all_reduce.c): whether they
 * run a call, and their launch. */
#ifndef HIDET_NCCL_CORE_COLL_OWN_ALL_REDUCE_INT_H_
#define HIDET_NCCL_CORE_COLL_OWN_ALL_REDUCE_INT_H_

#include <stddef.h>

#include "core/coll/collective_int.h"
#include "core/mem/tune_table_int.h"

struct hn_own;

/* The view an OWN registration takes for `bytes`: one-shot on 2 ranks, and up to
 * HN_OWN_ONE_SHOT_MAX bytes on more; two-shot above. */
#define HN_OWN_ONE_SHOT_MAX (512u << 10)
hn_view_t hidet_nccl__own_view(const struct hn_own *own, size_t bytes);

/* Whether the own kernels run this all_reduce (c routed to an own view by mem_route; red from
 * reduce_plan, bytes the buffer's): 1; else 0, with why (when not NULL; empty when the route
 * did not name them). Reasons: they cannot run on the communicator, inside a group, more bytes
 * than the staging, a dtype or op they lack. The same on every rank: nothing of the buffers. */
int hidet_nccl__own_takes(const hn_coll_t *c, hidet_nccl_dtype_t dtype, const hidet_nccl_reduction_t *red,
                          size_t bytes, char *why, size_t why_len);

/* Launches the kernel own_takes accepted on c->stream (after the communicator's last own
 * kernel if that was on another stream), recorded as the collective count x dtype. */
hidet_nccl_status_t hidet_nccl__own_all_reduce(const hn_coll_t *c, const void *sendbuff, void *recvbuff,
                                               size_t nccl_count, const hidet_nccl_reduction_t *red, size_t count,
                                               hidet_nccl_dtype_t dtype);

#endif
