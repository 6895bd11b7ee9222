/* hidet_nccl_gather: every dtype moved byte for byte; ncclGather (NCCL 2.28), or a grouped
 * send to the root and the root's receives. */
#include "core/collective_int.h"
#include "core/error_int.h"

/* Every rank's send to root, root's receive from every rank, in one group; the root's own
 * block moves only when not in place. */
static ncclResult_t grouped(const hn_coll_t *c, const char *send, char *recv, size_t nccl_count, ncclDataType_t type,
                            size_t bytes, int root, cudaStream_t stream) {
    int is_root = c->rank == root, in_place = is_root && send == recv + (size_t)root * bytes;
    ncclResult_t r = c->n->GroupStart();
    if (r != ncclSuccess) return r;
    if (!in_place) r = c->n->Send(send, nccl_count, type, root, c->comm, stream);
    for (int j = 0; is_root && r == ncclSuccess && j < c->nranks; j++)
        if (!(j == root && in_place)) r = c->n->Recv(recv + (size_t)j * bytes, nccl_count, type, j, c->comm, stream);
    ncclResult_t end = c->n->GroupEnd();
    return r != ncclSuccess ? r : end;
}

hidet_nccl_status_t hidet_nccl_gather(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                      hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    int grouped_p2p;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "gather", &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, count, (size_t)c.nranks, "count", &type, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_rank_arg(&c, root, "root"));
    HN_CHECK(hidet_nccl__grouped_p2p((const void *)c.n->Gather, &grouped_p2p));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
    if (c.rank == root) { /* recvbuff is used on the root only */
        HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
        HN_CHECK(hidet_nccl__coll_alias(&c, sendbuff, bytes, "sendbuff", recvbuff, bytes * (size_t)c.nranks,
                                        "recvbuff", (const char *)recvbuff + (size_t)root * bytes,
                                        "in place is sendbuff == recvbuff + root * count"));
    }
    if (grouped_p2p) {
        ncclResult_t r = grouped(&c, sendbuff, recvbuff, nccl_count, type, bytes, root, stream);
        return hidet_nccl__coll_end(&c, r, "grouped ncclSend/ncclRecv (gather)", count, dtype, "root", root);
    }
    ncclResult_t r = c.n->Gather(sendbuff, recvbuff, nccl_count, type, root, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclGather", count, dtype, "root", root);
}
