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
} hn_raw_nccl_t;

/* Loads NCCL through the library (hidet_nccl_load), then resolves the functions above in that
 * same copy (checked by version). 0, or -1 and why. */
int hn_raw_nccl(hn_raw_nccl_t *out, char *why, size_t why_bytes);

#endif
