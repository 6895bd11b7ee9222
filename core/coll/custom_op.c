/* The table of scaled sums (hidet_nccl_op_premul_sum): NCCL ops kept under op values above the
 * built-in ones, each tied to one communicator id and one dtype. Below both the collectives that
 * look ops up and the public calls that make and destroy them (core/coll/premul_sum.c). */
#include <pthread.h>

#include "core/coll/custom_op_int.h"
#include "core/nccl/dtype_int.h"
#include "core/base/status_int.h"
#include "core/base/finalize_hooks_int.h"

#define OP_BASE HN_CUSTOM_OP_BASE
#define MAX_OPS HN_CUSTOM_OP_MAX

typedef struct {
    int live;
    int comm_id;
    ncclComm_t comm;
    ncclRedOp_t op;
    hidet_nccl_dtype_t dtype;
} custom_t;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static custom_t g_ops[MAX_OPS];

/* finalize destroys every communicator, and NCCL their ops with them: the table empties. */
static void forget_all(void) {
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_OPS; i++) g_ops[i].live = 0;
    pthread_mutex_unlock(&g_lock);
}

/* k (a copy of op's slot) is live, of communicator comm_id (comm) and of dtype. */
static hidet_nccl_status_t check(const char *name, int comm_id, ncclComm_t comm, const custom_t *k,
                                 hidet_nccl_dtype_t dtype, hidet_nccl_op_t op) {
    if (!k->live)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "%s: op %d is not a live scaled sum (never made by hidet_nccl_op_premul_sum, or destroyed)",
                       name, (int)op);
    if (k->comm_id != comm_id || k->comm != comm)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "%s: op %d belongs to communicator id %d, not to id %d (an NCCL op is one communicator's)",
                       name, (int)op, k->comm_id, comm_id);
    if (k->dtype != dtype)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: op %d was made for %s, not for %s", name, (int)op,
                       hidet_nccl__dtype_str(k->dtype), hidet_nccl__dtype_str(dtype));
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__custom_op(const char *name, int comm_id, ncclComm_t comm, hidet_nccl_dtype_t dtype,
                                          hidet_nccl_op_t op, ncclRedOp_t *nccl_op) {
    pthread_mutex_lock(&g_lock);
    custom_t k = g_ops[(int)op - OP_BASE];
    pthread_mutex_unlock(&g_lock);
    HN_CHECK(check(name, comm_id, comm, &k, dtype, op));
    *nccl_op = k.op;
    return HIDET_NCCL_SUCCESS;
}

int hidet_nccl__custom_op_add(int comm_id, ncclComm_t comm, ncclRedOp_t nccl_op, hidet_nccl_dtype_t dtype,
                              hidet_nccl_op_t *op) {
    hidet_nccl__at_finalize(forget_all);
    int slot = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_OPS && slot < 0; i++)
        if (!g_ops[i].live) slot = i;
    if (slot >= 0) g_ops[slot] = (custom_t){1, comm_id, comm, nccl_op, dtype};
    pthread_mutex_unlock(&g_lock);
    if (slot < 0) return MAX_OPS;
    *op = (hidet_nccl_op_t)(OP_BASE + slot);
    return 0;
}

hidet_nccl_status_t hidet_nccl__custom_op_remove(const char *name, int comm_id, ncclComm_t comm, hidet_nccl_op_t op,
                                                 ncclRedOp_t *nccl_op) {
    pthread_mutex_lock(&g_lock);
    custom_t k = g_ops[(int)op - OP_BASE];
    hidet_nccl_status_t st = check(name, comm_id, comm, &k, k.dtype, op);
    if (st == HIDET_NCCL_SUCCESS) g_ops[(int)op - OP_BASE].live = 0;
    pthread_mutex_unlock(&g_lock);
    *nccl_op = k.op;
    return st;
}
