/* hidet_nccl_all_reduce: argument checks, the dtype table (or a scaled sum), the route on
 * library memory, then one ncclAllReduce or the own kernels; hidet_nccl_all_reduce_route says
 * which, in words. */
#include <stdint.h>
#include <stdio.h>

#include "core/base/log_int.h"
#include "core/base/status_int.h"
#include "core/coll/collective_int.h"
#include "core/coll/custom_op_int.h"
#include "core/coll/mem_route_int.h"
#include "core/coll/own_all_reduce_int.h"
#include "core/nccl/dtype_int.h"

/* A stream no call passes: prepare for hidet_nccl_all_reduce_route, which records nothing. */
#define HN_ROUTE_ONLY ((cudaStream_t)(uintptr_t)-1)

/* Everything all_reduce does before its call: checks, plan, route (c->comm, c->view). Inlined
 * into both callers. */
HN_INLINE hidet_nccl_status_t prepare(int comm_id, const char *name, const void *sendbuff, const void *recvbuff,
                                      size_t count, hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream,
                                      hn_coll_t *c, hidet_nccl_reduction_t *red, size_t *nccl_count, size_t *bytes) {
    HN_CHECK(hidet_nccl__coll_begin(comm_id, name, stream, c));
    c->dry = stream == HN_ROUTE_ONLY;
    HN_CHECK(hidet_nccl__reduce_plan(c, dtype, op, count, 1, red, nccl_count, bytes));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(c, sendbuff, "sendbuff", count));
    HN_CHECK(hidet_nccl__coll_buffer(c, recvbuff, "recvbuff", count));
    if (hidet_nccl__is_custom_op(op) && c->nranks < 0) HN_CHECK(hidet_nccl__coll_ranks(c)); /* a borrowed one */
    return hidet_nccl__mem_route(c, HN_TUNED_ALL_REDUCE, dtype, *bytes, sendbuff, *bytes, recvbuff, *bytes);
}

HN_HOT hidet_nccl_status_t hidet_nccl_all_reduce(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                          hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    hidet_nccl_reduction_t red;
    size_t nccl_count, bytes;
    HN_CHECK(prepare(comm_id, "all_reduce", sendbuff, recvbuff, count, dtype, op, stream, &c, &red, &nccl_count, &bytes));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    int done;
    hidet_nccl_status_t one = hidet_nccl__one_rank_reduce(&c, op, &red, sendbuff, recvbuff, count, dtype, nccl_count,
                                                          stream, &done);
    if (done) return one;
    if (c.view != 0 && hidet_nccl__view_is_own(c.view)) {
        if (hidet_nccl__own_takes(&c, dtype, &red, bytes, NULL, 0))
            return hidet_nccl__own_all_reduce(&c, sendbuff, recvbuff, nccl_count, &red, count, dtype);
        if (hidet_nccl__log_level() >= HN_LOG_INFO) { /* the reason only when it is told */
            char why[320];
            hidet_nccl__own_takes(&c, dtype, &red, bytes, why, sizeof why);
            HN_INFO("communicator id %d: all_reduce of %zu bytes of %s runs on NCCL, not the own kernels the route "
                    "named: %s",
                    comm_id, bytes, hidet_nccl__dtype_str(dtype), why);
        }
    }
    ncclResult_t r = c.n->AllReduce(sendbuff, recvbuff, nccl_count, red.nccl_dtype, red.nccl_op, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclAllReduce", count, dtype, NULL, 0);
}

hidet_nccl_status_t hidet_nccl_all_reduce_route(int comm_id, const void *sendbuff, const void *recvbuff, size_t count,
                                                hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, char *route,
                                                size_t route_len) {
    HN_ENTER();
    HN_CHECK_NOT_NULL(route);
    if (route_len == 0) return HN_FAIL(HIDET_NCCL_ERROR_INVALID_ARGUMENT, "route_len is 0");
    route[0] = '\0';
    hn_coll_t c;
    hidet_nccl_reduction_t red;
    size_t nccl_count, bytes;
    HN_CHECK(prepare(comm_id, "all_reduce_route", sendbuff, recvbuff, count, dtype, op, HN_ROUTE_ONLY, &c, &red, &nccl_count,
                     &bytes));
    char why[320] = "";
    if (count > 0 && c.nranks < 0) HN_CHECK(hidet_nccl__coll_ranks(&c)); /* a borrowed one */
    if (count == 0) {
        snprintf(route, route_len, "nothing (count 0)");
    } else if (c.nranks == 1) {
        snprintf(route, route_len, "local copy (one rank)");
    } else if (hidet_nccl__view_is_own(c.view) && hidet_nccl__own_takes(&c, dtype, &red, bytes, why, sizeof why)) {
        snprintf(route, route_len, "own %s", c.view == HN_VIEW_OWN2 ? "two-shot" : "one-shot");
    } else {
        hn_view_t v = hidet_nccl__view_is_own(c.view) ? HN_VIEW_PLAIN : (hn_view_t)c.view;
        snprintf(route, route_len, "nccl %s%s%s", hidet_nccl__view_name(v), why[0] ? ": " : "", why);
    }
    return HIDET_NCCL_SUCCESS;
}
