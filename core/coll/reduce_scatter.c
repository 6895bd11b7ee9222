/* hidet_nccl_reduce_scatter: all_reduce's dtype rules, one ncclReduceScatter. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"
#include "core/coll/mem_route_int.h"

HN_HOT hidet_nccl_status_t hidet_nccl_reduce_scatter(int comm_id, const void *sendbuff, void *recvbuff, size_t recvcount,
                                              hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    hidet_nccl_reduction_t red;
    size_t nccl_count, bytes;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "reduce_scatter", stream, &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__reduce_plan(&c, dtype, op, recvcount, (size_t)c.nranks, &red, &nccl_count, &bytes));
    if (recvcount == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", recvcount));
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", recvcount));
    HN_CHECK(hidet_nccl__coll_alias(&c, recvbuff, bytes, "recvbuff", sendbuff, bytes * (size_t)c.nranks, "sendbuff",
                                    (const char *)sendbuff + (size_t)c.rank * bytes,
                                    "in place is recvbuff == sendbuff + rank * recvcount"));
    HN_CHECK(hidet_nccl__mem_route(&c, HN_TUNED_REDUCE_SCATTER, dtype, bytes * (size_t)c.nranks, sendbuff,
                                   bytes * (size_t)c.nranks, recvbuff, bytes));
    int done;
    hidet_nccl_status_t one =
        hidet_nccl__one_rank_reduce(&c, op, &red, sendbuff, recvbuff, recvcount, dtype, nccl_count, stream, &done);
    if (done) return one;
    ncclResult_t r = c.n->ReduceScatter(sendbuff, recvbuff, nccl_count, red.nccl_dtype, red.nccl_op, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclReduceScatter", recvcount, dtype, NULL, 0);
}
