/* hidet_nccl_all_to_all: every dtype moved byte for byte; ncclAlltoAll (NCCL 2.28), or one
 * grouped send and receive per peer. Never in place: NCCL defines no in-place all_to_all (its
 * in-place list names broadcast, reduce, all_reduce, all_gather, reduce_scatter), and an
 * in-place ncclAlltoAll of NCCL 2.28.9 gave wrong blocks over NET/Socket (2 fake nodes on one
 * H200, docs/data/all_to_all_in_place_1xh200.txt); grouped send/recv would overwrite a block
 * before sending it. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"

/* Block j of send to rank j, block j of recv from rank j, in one group (balanced on failure). */
static ncclResult_t grouped(const hn_coll_t *c, const char *send, char *recv, size_t nccl_count, ncclDataType_t type,
                            size_t bytes, cudaStream_t stream) {
    ncclResult_t r = c->n->GroupStart();
    if (r != ncclSuccess) return r;
    for (int j = 0; r == ncclSuccess && j < c->nranks; j++) {
        r = c->n->Send(send + (size_t)j * bytes, nccl_count, type, j, c->comm, stream);
        if (r == ncclSuccess) r = c->n->Recv(recv + (size_t)j * bytes, nccl_count, type, j, c->comm, stream);
    }
    ncclResult_t end = c->n->GroupEnd();
    return r != ncclSuccess ? r : end;
}

HN_HOT hidet_nccl_status_t hidet_nccl_all_to_all(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                          hidet_nccl_dtype_t dtype, cudaStream_t stream) {
    HN_ENTER();
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    int grouped_p2p;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, "all_to_all", stream, &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, count, (size_t)c.nranks, "count", &type, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__grouped_p2p(&c, (const void *)c.n->AlltoAll, &grouped_p2p));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    HN_CHECK(hidet_nccl__coll_buffer(&c, sendbuff, "sendbuff", count));
    HN_CHECK(hidet_nccl__coll_buffer(&c, recvbuff, "recvbuff", count));
    size_t total = bytes * (size_t)c.nranks;
    HN_CHECK(hidet_nccl__coll_alias(&c, sendbuff, total, "sendbuff", recvbuff, total, "recvbuff", NULL,
                                    "all_to_all has no in-place form (NCCL defines none, and NCCL 2.28.9's in-place "
                                    "ncclAlltoAll was measured wrong over the network): use two buffers"));
    if (grouped_p2p) {
        ncclResult_t r = grouped(&c, sendbuff, recvbuff, nccl_count, type, bytes, stream);
        return hidet_nccl__coll_end(&c, r, "grouped ncclSend/ncclRecv (all_to_all)", count, dtype, NULL, 0);
    }
    ncclResult_t r = c.n->AlltoAll(sendbuff, recvbuff, nccl_count, type, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, "ncclAlltoAll", count, dtype, NULL, 0);
}
