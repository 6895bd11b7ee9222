/* hidet_nccl_all_reduce: argument checks, the dtype table, one ncclAllReduce. */
#include <stdio.h>

#include "core/cuda_int.h"
#include "core/dtype_int.h"
#include "core/error_int.h"
#include "core/group_int.h"
#include "core/health_int.h"
#include "core/registry_int.h"
#include "core/wait_int.h"

hidet_nccl_status_t hidet_nccl_all_reduce(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                          hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream) {
    HN_ENTER();
    ncclComm_t comm;
    int nranks;
    HN_CHECK(hidet_nccl__registry_lookup(comm_id, &comm, NULL, &nranks));
    const hn_nccl_t *n = hidet_nccl__nccl_loaded(); /* a registered communicator implies a loaded NCCL */
    hidet_nccl_reduction_t red;
    size_t nccl_count;
    HN_CHECK(hidet_nccl__plan(dtype, op, count, n->version, &red, &nccl_count));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    if (sendbuff == NULL || recvbuff == NULL)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s is NULL with count %zu",
                       sendbuff == NULL ? "sendbuff" : "recvbuff", count);
    if (nranks == 1) { /* every op of one value is that value: a copy, exact for every dtype */
        if (sendbuff == recvbuff) return HIDET_NCCL_SUCCESS;
        cudaError_t e = cudaMemcpyAsync(recvbuff, sendbuff, nccl_count * hidet_nccl__nccl_type_size(red.nccl_dtype),
                                        cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess) return hidet_nccl__cuda_fail(__func__, "cudaMemcpyAsync (one-rank all_reduce)", e);
        return HIDET_NCCL_SUCCESS;
    }
    ncclResult_t r = n->AllReduce(sendbuff, recvbuff, nccl_count, red.nccl_dtype, red.nccl_op, comm, stream);
    if (r == ncclSuccess) {
        if (hidet_nccl__group_depth() > 0) return hidet_nccl__group_track(comm);
        return HIDET_NCCL_SUCCESS;
    }
    char call[192];
    const char *dname = "?", *oname = "?";
    hidet_nccl_dtype_name(dtype, &dname);
    hidet_nccl_op_name(op, &oname);
    snprintf(call, sizeof call, "ncclAllReduce(communicator id %d, count %zu of %s, op %s)", comm_id, count, dname,
             oname);
    if (r != ncclInProgress)
        return hidet_nccl__comm_failed(comm_id, hidet_nccl__nccl_fail(__func__, call, r, comm), 0,
                                       "aborted after ncclAllReduce failed (error policy ABORT_COMM)");
    /* A non-blocking communicator may still be enqueuing (e.g. connecting on first use). */
    if (hidet_nccl__group_depth() > 0) return hidet_nccl__group_track(comm);
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    return hidet_nccl__await(n, &comm, 1, timeout, 0, call);
}
