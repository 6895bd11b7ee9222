/* hidet_nccl_gather and hidet_nccl_scatter, one the mirror of the other: every dtype moved
 * byte for byte; ncclGather / ncclScatter (NCCL 2.28), or one group of sends and receives.
 * In both, the root holds nranks blocks and every rank its own block. */
#include "core/coll/collective_int.h"
#include "core/base/status_int.h"

typedef struct {
    const char *name, *blocks_name, *own_name, *rule, *grouped_call, *native_call;
    int to_root; /* gather: every rank's own block goes to the root */
} direction_t;

static const direction_t k_gather = {"gather", "recvbuff", "sendbuff", "in place is sendbuff == recvbuff + root * count",
                                     "grouped ncclSend/ncclRecv (gather)", "ncclGather", 1};
static const direction_t k_scatter = {"scatter", "sendbuff", "recvbuff",
                                      "in place is recvbuff == sendbuff + root * count",
                                      "grouped ncclSend/ncclRecv (scatter)", "ncclScatter", 0};

/* The grouped form, in one group kept balanced on a failure: gather sends `own` to root and
 * the root receives block j from rank j; scatter the reverse. The root's own block moves only
 * when it is not in place. */
static ncclResult_t grouped(const hn_coll_t *c, const direction_t *d, const char *blocks, const void *own,
                            size_t nccl_count, ncclDataType_t type, size_t bytes, int root, cudaStream_t stream) {
    int is_root = c->rank == root, in_place = is_root && own == blocks + (size_t)root * bytes;
    ncclResult_t r = c->n->GroupStart();
    if (r != ncclSuccess) return r;
    if (!in_place)
        r = d->to_root ? c->n->Send(own, nccl_count, type, root, c->comm, stream)
                       : c->n->Recv((void *)own, nccl_count, type, root, c->comm, stream);
    for (int j = 0; is_root && r == ncclSuccess && j < c->nranks; j++) {
        if (j == root && in_place) continue; /* the root's own block is already where it goes */
        const char *block = blocks + (size_t)j * bytes;
        r = d->to_root ? c->n->Recv((void *)block, nccl_count, type, j, c->comm, stream)
                       : c->n->Send(block, nccl_count, type, j, c->comm, stream);
    }
    ncclResult_t end = c->n->GroupEnd();
    return r != ncclSuccess ? r : end;
}

/* blocks: the root's buffer of nranks blocks (used on the root only); own: this rank's block. */
HN_HOT static hidet_nccl_status_t rooted(const direction_t *d, int comm_id, const void *sendbuff, void *recvbuff,
                                  size_t count, hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    hn_coll_t c;
    ncclDataType_t type;
    size_t nccl_count, bytes;
    int grouped_p2p;
    HN_CHECK(hidet_nccl__coll_begin(comm_id, d->name, stream, &c));
    HN_CHECK(hidet_nccl__coll_ranks(&c));
    HN_CHECK(hidet_nccl__move_plan(&c, dtype, count, (size_t)c.nranks, "count", &type, &nccl_count, &bytes));
    HN_CHECK(hidet_nccl__coll_rank_arg(&c, root, "root"));
    ncclResult_t (*native)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t) =
        d->to_root ? c.n->Gather : c.n->Scatter;
    HN_CHECK(hidet_nccl__grouped_p2p(&c, (const void *)native, &grouped_p2p));
    if (count == 0) return HIDET_NCCL_SUCCESS;
    const void *blocks = d->to_root ? recvbuff : sendbuff, *own = d->to_root ? sendbuff : recvbuff;
    HN_CHECK(hidet_nccl__coll_buffer(&c, own, d->own_name, count));
    if (c.rank == root) {
        HN_CHECK(hidet_nccl__coll_buffer(&c, blocks, d->blocks_name, count));
        HN_CHECK(hidet_nccl__coll_alias(&c, own, bytes, d->own_name, blocks, bytes * (size_t)c.nranks, d->blocks_name,
                                        (const char *)blocks + (size_t)root * bytes, d->rule));
    }
    ncclResult_t r = grouped_p2p ? grouped(&c, d, blocks, own, nccl_count, type, bytes, root, stream)
                                 : native(sendbuff, recvbuff, nccl_count, type, root, c.comm, stream);
    return hidet_nccl__coll_end(&c, r, grouped_p2p ? d->grouped_call : d->native_call, count, dtype, "root", root);
}

HN_HOT hidet_nccl_status_t hidet_nccl_gather(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                      hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    HN_ENTER();
    return rooted(&k_gather, comm_id, sendbuff, recvbuff, count, dtype, root, stream);
}

HN_HOT hidet_nccl_status_t hidet_nccl_scatter(int comm_id, const void *sendbuff, void *recvbuff, size_t count,
                                       hidet_nccl_dtype_t dtype, int root, cudaStream_t stream) {
    HN_ENTER();
    return rooted(&k_scatter, comm_id, sendbuff, recvbuff, count, dtype, root, stream);
}
