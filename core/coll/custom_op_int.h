/* Internal: the table of scaled sums (core/coll/custom_op.c), which the collectives read and
 * hidet_nccl_op_premul_sum / hidet_nccl_op_destroy fill and empty. */
#ifndef HIDET_NCCL_CORE_COLL_CUSTOM_OP_INT_H_
#define HIDET_NCCL_CORE_COLL_CUSTOM_OP_INT_H_

#include <nccl.h>

#include "hidet_nccl/hidet_nccl.h"

/* Op values HN_CUSTOM_OP_BASE .. + HN_CUSTOM_OP_MAX - 1 are scaled sums (the table's slots). */
#define HN_CUSTOM_OP_BASE 64
#define HN_CUSTOM_OP_MAX 1024

/* 1 if op is in the range of premul_sum ops (it may still be invalid). */
static inline int hidet_nccl__is_custom_op(hidet_nccl_op_t op) {
    return (int)op >= HN_CUSTOM_OP_BASE && (int)op < HN_CUSTOM_OP_BASE + HN_CUSTOM_OP_MAX;
}
/* The NCCL op of a scaled-sum op, for communicator comm_id (comm) and dtype; an error naming
 * the call (`name`: "all_reduce") when it is not one of the communicator's, was made for
 * another dtype, or is destroyed. */
hidet_nccl_status_t hidet_nccl__custom_op(const char *name, int comm_id, ncclComm_t comm, hidet_nccl_dtype_t dtype,
                                          hidet_nccl_op_t op, ncclRedOp_t *nccl_op);
/* Keeps nccl_op under a new op value *op: 0, or the number of live ops when the table is full. */
int hidet_nccl__custom_op_add(int comm_id, ncclComm_t comm, ncclRedOp_t nccl_op, hidet_nccl_dtype_t dtype,
                              hidet_nccl_op_t *op);
/* Takes op (a scaled sum of communicator comm_id) out of the table: *nccl_op is for NCCL to
 * destroy. An error as hidet_nccl__custom_op's (no dtype check) leaves the table as it was. */
hidet_nccl_status_t hidet_nccl__custom_op_remove(const char *name, int comm_id, ncclComm_t comm, hidet_nccl_op_t op,
                                                 ncclRedOp_t *nccl_op);

#endif
