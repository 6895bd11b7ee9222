/* What every collective shares (core/coll/collective_int.h). */
#include <stdint.h>
#include <stdio.h>

#include "core/coll/collective_int.h"
#include "core/nccl/cuda_int.h"
#include "core/coll/custom_op_int.h"
#include "core/nccl/dtype_int.h"
#include "core/base/status_int.h"
#include "core/comm/group_int.h"
#include "core/comm/comm_health_int.h"
#include "core/comm/registry_int.h"
#include "core/base/settings_int.h"
#include "core/comm/wait_int.h"

hidet_nccl_status_t hidet_nccl__coll_ask_ranks(const hn_nccl_t *n, ncclComm_t comm, int id, const char *name,
                                              int *nranks, int *rank) {
    ncclResult_t r = *nranks > 0 ? ncclSuccess : n->CommCount(comm, nranks);
    if (r == ncclSuccess) r = n->CommUserRank(comm, rank);
    if (r != ncclSuccess) {
        char call[96];
        snprintf(call, sizeof call, "ncclCommCount/ncclCommUserRank (communicator id %d)", id);
        return hidet_nccl__nccl_fail(name, call, r, comm);
    }
    hidet_nccl__registry_note_asked(id, comm, *nranks, *rank); /* a size and rank never change */
    return HIDET_NCCL_SUCCESS;
}

HN_COLD hidet_nccl_status_t hidet_nccl__plan_overflow(const char *name, hidet_nccl_dtype_t dtype, size_t count,
                                                      size_t blocks, size_t elem_bytes, const char *what) {
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: %s %zu of %s (%zu bytes each)%s overflows size_t bytes",
                   name, what, count, hidet_nccl__dtype_str(dtype), elem_bytes,
                   blocks > 1 ? " times the number of ranks" : "");
}

HN_HOT hidet_nccl_status_t hidet_nccl__reduce_plan(hn_coll_t *c, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op,
                                            size_t count, size_t blocks, hidet_nccl_reduction_t *red,
                                            size_t *nccl_count, size_t *bytes) {
    ncclRedOp_t nccl_op = 0;
    c->op = (int)op;
    int custom = hidet_nccl__is_custom_op(op);
    if (custom) HN_CHECK(hidet_nccl__custom_op(c->name, c->id, c->comm, dtype, op, &nccl_op));
    /* the table, the NCCL version, and count's bytes against size_t */
    HN_CHECK(hidet_nccl__plan_for(c->name, dtype, custom ? HIDET_NCCL_SUM : op, count, c->n->version, red, nccl_count));
    if (custom) red->nccl_op = nccl_op;
    size_t elem = red->count_multiplier * hidet_nccl__nccl_type_size(red->nccl_dtype);
    if (blocks > 1) /* reduce_scatter's sendbuff: nranks times that */
        return hidet_nccl__plan_sizes(c, dtype, count, blocks, red->count_multiplier, elem, "count", nccl_count,
                                      bytes);
    *bytes = count * elem;
    return HIDET_NCCL_SUCCESS;
}

HN_COLD hidet_nccl_status_t hidet_nccl__coll_rank_refused(const char *name, int id, int nranks, int r,
                                                          const char *what) {
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: %s %d is not a rank of communicator id %d (0 .. %d)",
                   name, what, r, id, nranks - 1);
}

HN_COLD hidet_nccl_status_t hidet_nccl__coll_buffer_refused(const char *name, const char *what, size_t count) {
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL with count %zu", name, what, count);
}

HN_COLD hidet_nccl_status_t hidet_nccl__coll_alias_refused(const char *name, const void *a, size_t a_bytes,
                                                           const char *a_name, const void *b, size_t b_bytes,
                                                           const char *b_name, const char *rule) {
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "%s: %s %p (%zu bytes) overlaps %s %p (%zu bytes); %s", name,
                   a_name, a, a_bytes, b_name, b, b_bytes, rule);
}

/* NCCL 2.28.9 leaves the last elements of a one-rank scaled sum unwritten for some counts above
 * 4096 (4097, 12289, 1048577, 1048579 of float32, measured on an H200); a multiple of 4096
 * elements and the rest, as two calls, came out right for every count tried. */
#define ONE_RANK_SCALED_STEP 4096

HN_HOT hidet_nccl_status_t hidet_nccl__one_rank_reduce_run(const hn_coll_t *c, hidet_nccl_op_t op,
                                                           const hidet_nccl_reduction_t *red, const void *send,
                                                           void *recv, size_t count, hidet_nccl_dtype_t dtype,
                                                           size_t nccl_count, cudaStream_t stream) {
    size_t elem = hidet_nccl__nccl_type_size(red->nccl_dtype);
    if (!hidet_nccl__is_custom_op(op)) { /* every op of one value is that value: a copy, exact */
        if (c->trace != NULL)
            hidet_nccl__trace_record(c->trace, c->name, count, dtype, c->op, -1, stream, ncclSuccess, c->in_group);
        if (recv == send) return HIDET_NCCL_SUCCESS;
        cudaError_t e = cudaMemcpyAsync(recv, send, nccl_count * elem, cudaMemcpyDeviceToDevice, stream);
        if (e == cudaSuccess) return HIDET_NCCL_SUCCESS;
        char call[64];
        snprintf(call, sizeof call, "cudaMemcpyAsync (one-rank %s)", c->name);
        return hidet_nccl__cuda_fail(c->name, call, e);
    }
    size_t bulk = nccl_count / ONE_RANK_SCALED_STEP * ONE_RANK_SCALED_STEP;
    ncclResult_t r = ncclSuccess;
    if (bulk > 0) r = c->n->AllReduce(send, recv, bulk, red->nccl_dtype, red->nccl_op, c->comm, stream);
    if (r == ncclSuccess && bulk < nccl_count)
        r = c->n->AllReduce((const char *)send + bulk * elem, (char *)recv + bulk * elem, nccl_count - bulk,
                            red->nccl_dtype, red->nccl_op, c->comm, stream);
    return hidet_nccl__coll_end(c, r, "ncclAllReduce (one rank, scaled sum)", count, dtype, NULL, 0);
}

/* What follows an NCCL call that did not return ncclSuccess: the error policy, or (a
 * non-blocking communicator still enqueuing) the wait. Out of the hot path: its messages'
 * buffers and formatting stay off the lines a successful call runs through. */
HN_COLD hidet_nccl_status_t hidet_nccl__coll_unfinished(const hn_nccl_t *n, ncclComm_t comm, int id, const char *name,
                                                       ncclResult_t r, const char *nccl_call, size_t count,
                                                       hidet_nccl_dtype_t dtype, const char *who, int rank,
                                                       int in_group) {
    char call[192], tail[32] = "";
    if (who != NULL) snprintf(tail, sizeof tail, ", %s %d", who, rank);
    snprintf(call, sizeof call, "%s(communicator id %d, count %zu of %s%s)", nccl_call, id, count,
             hidet_nccl__dtype_str(dtype), tail);
    if (r != ncclInProgress) {
        char event[160];
        snprintf(event, sizeof event, "%.100s failed (error policy ABORT_COMM)", nccl_call);
        return hidet_nccl__comm_failed(id, hidet_nccl__nccl_fail(name, call, r, comm), 0, event);
    }
    /* A non-blocking communicator may still be enqueuing (e.g. connecting on first use). */
    if (in_group) return hidet_nccl__group_track(comm);
    double timeout;
    HN_CHECK(hidet_nccl__timeout_seconds(&timeout));
    return hidet_nccl__await(n, &comm, 1, timeout, 0, call);
}

HN_COLD hidet_nccl_status_t hidet_nccl__grouped_p2p_invalid(void) {
    int forced = 0;
    hidet_nccl_status_t st = hidet_nccl__setting_int(HN_SETTING_GROUPED_P2P, &forced);
    if (st != HIDET_NCCL_SUCCESS) return st;
    return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "HIDET_NCCL_GROUPED_P2P was invalid when this thread last "
                   "read it and is now valid: call again");
}
