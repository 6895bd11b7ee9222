/* hidet_nccl_all_reduce: argument checks, the dtype table (or a scaled sum), one ncclAllReduce. */
#include "core/coll/collective_int.h"
#include "core/coll/custom_op_int.h"
#include "core/base/status_int.h"
#include "core/coll/mem_route_int.h"

hidet_nccl_status_t hidet_nccl_all_reduce(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                          hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    hidet_nccl_reduction_t red;
    size_t nccl_count, bytes;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "all_reduce", stream, &c));
    HN_CHECK(hidet_nccl__reduce_plan(&c, dtype, op, count, 1, &red, &nccl_count, &bytes));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
    if (hidet_nccl__is_custom_op(op) && c.nranks < 0) HN_CHECK(hidet_nccl__coll_ranks(&c)); /* a borrowed one */
    HN_CHECK(hidet_nccl__mem_route(&c, HN_TUNED_ALL_REDUCE, dtype, bytes, sendbuff, bytes, recvbuff, bytes));
    int done;
    hidet_nccl_status_t one = hidet_nccl__one_rank_reduce(&c, op, &red, sendbuff, recvbuff, count, dtype, nccl_count,
                                                          stream, &done);
    if (done) return one;
    ncclResult_t r = c.n->AllReduce(sendbuff, recvbuff, nccl_count, red.nccl_dtype, red.nccl_op, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclAllReduce", count, dtype, NULL, 0);
}
