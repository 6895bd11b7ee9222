/* hidet_nccl_broadcast: every dtype moved byte for byte, one ncclBroadcast. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"

HN_HOT hidet_nccl_status_t hidet_nccl_broadcast(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                         hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "broadcast", stream, &c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, count, 1, "count", &type, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__coll_rank_arg(&c, root, "root"));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
    if (c.rank == root) { /* sendbuff is read on the root only */
        HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
        HN_CHECK(hidet_nccl__coll_alias(&c, sendbuff, bytes, "sendbuff", recvbuff, bytes, "recvbuff", recvbuff,
                                        "in place is sendbuff == recvbuff"));
    }
    ncclResult_t r = c.n->Broadcast(sendbuff, recvbuff, nccl_count, type, root, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclBroadcast", count, dtype, "root", root);
}
