/* hidet_nccl_scatter: every dtype moved byte for byte; ncclScatter (NCCL 2.28), or the root's
 * grouped sends and every rank's receive. */
#include "core/collective_int.h"
#include "core/error_int.h"

/* The root's send to every rank, every rank's receive from root, in one group; the root's own
 * block moves only when not in place. */
static ncclResult_t grouped(const hn_coll_t *c, const char *send, char *recv, size_t nccl_count, ncclDataType_t type,
                            size_t bytes, int root, cudaStream_t stream) {
    int is_root = c->rank == root, in_place = is_root && recv == send + (size_t)root * bytes;
    ncclResult_t r = c->n->GroupStart();
    if (r != ncclSuccess) return r;
    for (int j = 0; is_root && r == ncclSuccess && j < c->nranks; j++)
        if (!(j == root && in_place)) r = c->n->Send(send + (size_t)j * bytes, nccl_count, type, j, c->comm, stream);
    if (r == ncclSuccess && !in_place) r = c->n->Recv(recv, nccl_count, type, root, c->comm, stream);
    ncclResult_t end = c->n->GroupEnd();
    return r != ncclSuccess ? r : end;
}

hidet_nccl_status_t hidet_nccl_scatter(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                       hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    int grouped_p2p;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "scatter", &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, count, (size_t)c.nranks, "count", &type, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_rank_arg(&c, root, "root"));
    HN_CHECK(hidet_nccl__grouped_p2p((const void *)c.n->Scatter, &grouped_p2p));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
    if (c.rank == root) { /* sendbuff is read on the root only */
        HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
        HN_CHECK(hidet_nccl__coll_alias(&c, recvbuff, bytes, "recvbuff", sendbuff, bytes * (size_t)c.nranks,
                                        "sendbuff", (const char *)sendbuff + (size_t)root * bytes,
                                        "in place is recvbuff == sendbuff + root * count"));
    }
    if (grouped_p2p) {
        ncclResult_t r = grouped(&c, sendbuff, recvbuff, nccl_count, type, bytes, root, stream);
        return hidet_nccl__coll_end(&c, r, "grouped ncclSend/ncclRecv (scatter)", count, dtype, "root", root);
    }
    ncclResult_t r = c.n->Scatter(sendbuff, recvbuff, nccl_count, type, root, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclScatter", count, dtype, "root", root);
}
