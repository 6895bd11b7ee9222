/* Raw NCCL calls, for the comparisons of the benchmark and the GPU suite, made on the very NCCL
 * the library loaded (found through the public API and the dynamic loader, not through the
 * library's internals). */
#ifndef HIDET_NCCL_TOOLS_SUPPORT_RAW_NCCL_H_
#define HIDET_NCCL_TOOLS_SUPPORT_RAW_NCCL_H_

#include <stddef.h>

#include <cuda_runtime_api.h>
#include <nccl.h>

typedef struct {
    ncclResult_t (*GetVersion)(int *version);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *async_error);
    ncclResult_t (*AllReduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                              ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
    const char *(*GetErrorString)(ncclResult_t result);
    ncclResult_t (*AllGather)(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*ReduceScatter)(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
    /* NULL before NCCL 2.14 */
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config);
    /* The rest of the collective set (every NCCL 2.7 and newer has these) */
    ncclResult_t (*Broadcast)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Reduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op,
                           int root, ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Send)(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                         cudaStream_t stream);
    ncclResult_t (*Recv)(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                         cudaStream_t stream);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    /* NULL before NCCL 2.28 (then hn_raw_all_to_all and hn_raw_gather_scatter group sends and receives) */
    ncclResult_t (*AlltoAll)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                             ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Gather)(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Scatter)(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);
} hn_raw_nccl_t;

/* Loads NCCL through the library (hidet_nccl_load), then resolves the functions above in that
 * same copy (checked by version). 0, or -1 and why. */
int hn_raw_nccl(hn_raw_nccl_t *out, char *why, size_t why_bytes);

/* The collectives NCCL 2.28 added, as raw NCCL code makes them: the native call, or (grouped
 * != 0, or the loaded NCCL lacks it) one group of ncclSend/ncclRecv, as nccl-tests and the
 * library's fallback do. count: NCCL elements of type per rank's block; block_bytes: the bytes of
 * one block. all_to_all: block j of send to rank j, landing as block `rank` there. */
ncclResult_t hn_raw_all_to_all(const hn_raw_nccl_t *n, int grouped, const void *send, void *recv, size_t count,
                               ncclDataType_t type, size_t block_bytes, ncclComm_t comm, int nranks,
                               cudaStream_t stream);
/* gather (to_root 1: every rank's send block to root's recv block `rank`) or scatter (to_root 0:
 * root's send block j to rank j's recv). In place (the root's own block already where it goes)
 * its own block is not moved. */
ncclResult_t hn_raw_gather_scatter(const hn_raw_nccl_t *n, int grouped, int to_root, const void *send, void *recv,
                                   size_t count, ncclDataType_t type, size_t block_bytes, int root, ncclComm_t comm,
                                   int rank, int nranks, cudaStream_t stream);
/* nccl-tests' sendrecv: send to `next`, receive from `prev`, in one group. */
ncclResult_t hn_raw_send_recv(const hn_raw_nccl_t *n, const void *send, void *recv, size_t count, ncclDataType_t type,
                              int next, int prev, ncclComm_t comm, cudaStream_t stream);

#endif
