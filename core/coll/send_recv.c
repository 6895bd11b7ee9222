/* hidet_nccl_send / hidet_nccl_recv: point to point, every dtype moved byte for byte. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"

/* The checks both share: the plan, the peer, the buffer (inlined into each). */
HN_INLINE hidet_nccl_status_t prepare(hn_coll_t *c, const void *buff, const char *buff_name, size_t count,
                                      hidet_nccl_dtype_t dtype, int peer, ncclDataType_t *type, size_t *nccl_count) {
    size_t bytes;
    HN_CHECK(hidet_nccl__move_plan(c, dtype, count, 1, "count", type, nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_ranks(c));
    HN_CHECK(hidet_nccl__coll_rank_arg(c, peer, "peer"));
    if (peer == c->rank && !c->in_group)
        return HN_FAIL(HIDET_NCCL_ERROR_INVALID_USAGE,
                       "%s: peer %d is this rank: a send to itself and its receive must be in one group "
                       "(hidet_nccl_group_start ... hidet_nccl_group_end), or NCCL waits forever",
                       c->name, peer);
    if (count > 0) HN_CHECK(hidet_nccl__coll_buffer(c, buff, buff_name, count));
    return HIDET_NCCL_SUCCESS;
}

HN_HOT hidet_nccl_status_t hidet_nccl_send(int comm_id, const void *sendbuff, size_t count, hidet_nccl_dtype_t dtype,
                                    int peer, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "send", stream, &c));
    HN_CHECK(prepare(&c, sendbuff, "sendbuff", count, dtype, peer, &type, &nccl_count));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    ncclResult_t r = c.n->Send(sendbuff, nccl_count, type, peer, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclSend", count, dtype, "peer", peer);
}

HN_HOT hidet_nccl_status_t hidet_nccl_recv(int comm_id, void *recvbuff, size_t count, hidet_nccl_dtype_t dtype, int peer,
                                    cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "recv", stream, &c));
    HN_CHECK(prepare(&c, recvbuff, "recvbuff", count, dtype, peer, &type, &nccl_count));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    ncclResult_t r = c.n->Recv(recvbuff, nccl_count, type, peer, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclRecv", count, dtype, "peer", peer);
}
