/* hidet_nccl_all_gather: every dtype moved byte for byte, one ncclAllGather. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"
#include "core/coll/mem_route_int.h"

HN_HOT hidet_nccl_status_t hidet_nccl_all_gather(int comm_id, const void *sendbuff, void *recvbuff, size_t sendcount,
                                          hidet_nccl_dtype_t dtype, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "all_gather", stream, &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, sendcount, (size_t)c.nranks, "sendcount", &type, &nccl_count, &bytes));
    if (sendcount == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", sendcount));
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", sendcount));
    HN_CHECK(hidet_nccl__coll_alias(&c, sendbuff, bytes, "sendbuff", recvbuff, bytes * (size_t)c.nranks, "recvbuff",
                                    (const char *)recvbuff + (size_t)c.rank * bytes,
                                    "in place is sendbuff == recvbuff + rank * sendcount"));
    HN_CHECK(hidet_nccl__mem_route(&c, HN_TUNED_ALL_GATHER, dtype, bytes * (size_t)c.nranks, sendbuff, bytes,
                                   recvbuff, bytes * (size_t)c.nranks));
    ncclResult_t r = c.n->AllGather(sendbuff, recvbuff, nccl_count, type, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclAllGather", sendcount, dtype, NULL, 0);
}
