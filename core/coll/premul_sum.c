/* hidet_nccl_op_premul_sum / hidet_nccl_op_destroy: NCCL's scaled sums (ncclRedOpCreatePreMulSum),
 * kept in the table of core/coll/custom_op.c. */
#include <stdio.h>

#include "core/coll/collective_int.h"
#include "core/coll/custom_op_int.h"
#include "core/nccl/dtype_int.h"
#include "core/base/status_int.h"
#include "core/nccl/nccl_loader_int.h"
#include "core/nccl/nccl_version_int.h"

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
    int full = hidet_nccl__custom_op_add(comm_id, c.comm, nccl_op, dtype, op);
    if (full) {
        c.n->RedOpDestroy(nccl_op, c.comm);
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE, "op_premul_sum: %d scaled sums are live, the most the library "
                       "keeps; destroy some with hidet_nccl_op_destroy", full);
    }
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
    ncclRedOp_t nccl_op;
    HN_CHECK(hidet_nccl__custom_op_remove("op_destroy", comm_id, c.comm, op, &nccl_op));
    ncclResult_t r = c.n->RedOpDestroy(nccl_op, c.comm);
    if (r != ncclSuccess) return hidet_nccl__nccl_fail("hidet_nccl_op_destroy", "ncclRedOpDestroy", r, c.comm);
    return HIDET_NCCL_SUCCESS;
}
