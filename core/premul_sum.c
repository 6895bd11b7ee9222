/* hidet_nccl_op_premul_sum / hidet_nccl_op_destroy: NCCL's scaled sums (ncclRedOpCreatePreMulSum),
 * kept in a table under op values above the built-in ones, each tied to one communicator id
 * and one dtype. */
#include <pthread.h>
#include <stdio.h>

#include "core/collective_int.h"
#include "core/dtype_int.h"
#include "core/error_int.h"
#include "core/finalize_hooks_int.h"
#include "core/nccl_version_int.h"

#define OP_BASE 64 /* op values OP_BASE .. OP_BASE + MAX_OPS - 1 are scaled sums */
#define MAX_OPS 1024

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

int hidet_nccl__is_custom_op(hidet_nccl_op_t op) { return (int)op >= OP_BASE && (int)op < OP_BASE + MAX_OPS; }

/* k (a copy of op's slot) is live, of communicator c and of dtype. */
static hidet_nccl_status_t check(const hn_coll_t *c, const custom_t *k, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op) {
    if (!k->live)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "%s: op %d is not a live scaled sum (never made by hidet_nccl_op_premul_sum, or destroyed)",
                       c->name, (int)op);
    if (k->comm_id != c->id || k->comm != c->comm)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "%s: op %d belongs to communicator id %d, not to id %d (an NCCL op is one communicator's)",
                       c->name, (int)op, k->comm_id, c->id);
    if (k->dtype != dtype)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: op %d was made for %s, not for %s", c->name, (int)op,
                       hidet_nccl__dtype_str(k->dtype), hidet_nccl__dtype_str(dtype));
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl__custom_op(const hn_coll_t *c, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                          ncclRedOp_t *nccl_op) {
    pthread_mutex_lock(&g_lock);
    custom_t k = g_ops[(int)op - OP_BASE];
    pthread_mutex_unlock(&g_lock);
    HN_CHECK(check(c, &k, dtype, op));
    *nccl_op = k.op;
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_op_premul_sum(int comm_id, hidet_nccl_dtype_t dtype, const void *scalar,
                                             int scalar_on_device, hidet_nccl_op_t *op) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(scalar);
    HN_CHECK_NOT_NULL(op);
    if (scalar_on_device != 0 && scalar_on_device != 1)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "scalar_on_device %d is not 0 (host) or 1 (device)",
                       scalar_on_device);
    hn_coll_t c;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "op_premul_sum", NULL, &c));
    hidet_nccl_reduction_t red;
    size_t unused;
    if (!hidet_nccl__sum_allowed(dtype))
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED, "op_premul_sum: a scaled sum of %s is not supported (%s has no "
                       "exact sum)", hidet_nccl__dtype_str(dtype), hidet_nccl__dtype_str(dtype));
    HN_CHECK(hidet_nccl__plan_for("op_premul_sum", dtype, HIDET_NCCL_SUM, 1, c.n->version, &red, &unused));
    if (c.n->RedOpCreatePreMulSum == NULL || c.n->RedOpDestroy == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_UNSUPPORTED,
                       "op_premul_sum needs NCCL 2.11 or newer (ncclRedOpCreatePreMulSum); the loaded NCCL is %d.%d.%d",
                       hidet_nccl__version_major(c.n->version), hidet_nccl__version_minor(c.n->version),
                       hidet_nccl__version_patch(c.n->version));
    ncclRedOp_t nccl_op;
    ncclResult_t r = c.n->RedOpCreatePreMulSum(&nccl_op, (void *)scalar, red.nccl_dtype,
                                               scalar_on_device ? ncclScalarDevice : ncclScalarHostImmediate, c.comm);
    if (r != ncclSuccess) {
        char call[128];
        snprintf(call, sizeof call, "ncclRedOpCreatePreMulSum(communicator id %d, %s)", comm_id,
                 hidet_nccl__dtype_str(dtype));
        return hidet_nccl__nccl_fail("hidet_nccl_op_premul_sum", call, r, c.comm);
    }
    hidet_nccl__at_finalize(forget_all);
    int slot = -1;
    pthread_mutex_lock(&g_lock);
    for (int i = 0; i < MAX_OPS && slot < 0; i++)
        if (!g_ops[i].live) slot = i;
    if (slot >= 0) g_ops[slot] = (custom_t){1, comm_id, c.comm, nccl_op, dtype};
    pthread_mutex_unlock(&g_lock);
    if (slot < 0) {
        c.n->RedOpDestroy(nccl_op, c.comm);
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "op_premul_sum: %d scaled sums are live, the most the library "
                       "keeps; destroy some with hidet_nccl_op_destroy", MAX_OPS);
    }
    *op = (hidet_nccl_op_t)(OP_BASE + slot);
    return HIDET_NCCL_SUCCESS;
}

hidet_nccl_status_t hidet_nccl_op_destroy(int comm_id, hidet_nccl_op_t op) {
    HN_ENTER();
    if (!hidet_nccl__is_custom_op(op))
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT,
                       "op %d is not a scaled sum of hidet_nccl_op_premul_sum (built-in ops are never destroyed)",
                       (int)op);
    hn_coll_t c;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "op_destroy", NULL, &c));
    pthread_mutex_lock(&g_lock);
    custom_t k = g_ops[(int)op - OP_BASE];
    hidet_nccl_status_t st = check(&c, &k, k.dtype, op);
    if (st == HIDET_NCCL_SUCCESS) g_ops[(int)op - OP_BASE].live = 0;
    pthread_mutex_unlock(&g_lock);
    if (st != HIDET_NCCL_SUCCESS) return st;
    ncclResult_t r = c.n->RedOpDestroy(k.op, c.comm);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail("hidet_nccl_op_destroy", "ncclRedOpDestroy", r, c.comm);
    return HIDET_NCCL_SUCCESS;
}
