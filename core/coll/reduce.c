/* hidet_nccl_reduce: all_reduce's dtype rules, one ncclReduce to the root. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"

HN_HOT hidet_nccl_status_t hidet_nccl_reduce(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                      hidet_nccl_dtype_t dtype, hidet_nccl_op_t op, int root, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    hidet_nccl_reduction_t red;
    size_t nccl_count, bytes;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "reduce", stream, &c));
    HN_CHECK(hidet_nccl__reduce_plan(&c, dtype, op, count, 1, &red, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__coll_rank_arg(&c, root, "root"));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
    if (c.rank == root) { /* recvbuff is written on the root only */
        HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
        HN_CHECK(hidet_nccl__coll_alias(&c, sendbuff, bytes, "sendbuff", recvbuff, bytes, "recvbuff", recvbuff,
                                        "in place is sendbuff == recvbuff"));
    }
    int done;
    hidet_nccl_status_t one = hidet_nccl__one_rank_reduce(&c, op, &red, sendbuff, recvbuff, count, dtype, nccl_count,
                                                          stream, &done);
    if (done) return one;
    ncclResult_t r = c.n->Reduce(sendbuff, recvbuff, nccl_count, red.nccl_dtype, red.nccl_op, root, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclReduce", count, dtype, "root", root);
}
