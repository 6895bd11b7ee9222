/* Every NCCL function the library calls, declared once: the hn_nccl_t table of
 * core/nccl/nccl_loader_int.h and the loader's list of symbols to resolve are made from this list.
 *
 *   X(return type, name without "nccl", NCCL version that added it (0: every NCCL 2.x this
 *     library supports, 2.7 and newer: required), (parameters))
 *
 * An optional function is NULL in the table when the loaded NCCL lacks it; its users check
 * with hidet_nccl__needs, which names the version. A new NCCL call is a row here and its use. */
#ifndef HIDET_NCCL_CORE_NCCL_NCCL_SYMBOLS_H_
#define HIDET_NCCL_CORE_NCCL_NCCL_SYMBOLS_H_

#define HN_NCCL_SYMBOLS(X)                                                                                             \
    X(ncclResult_t, GetVersion, 0, (int *version))                                                                     \
    X(ncclResult_t, GetUniqueId, 0, (ncclUniqueId * id))                                                              \
    X(ncclResult_t, CommInitRank, 0, (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank))                      \
    X(ncclResult_t, CommDestroy, 0, (ncclComm_t comm))                                                                 \
    X(ncclResult_t, CommAbort, 0, (ncclComm_t comm))                                                                   \
    X(ncclResult_t, CommCount, 0, (const ncclComm_t comm, int *count))                                                 \
    X(ncclResult_t, CommCuDevice, 0, (const ncclComm_t comm, int *device))                                             \
    X(ncclResult_t, CommUserRank, 0, (const ncclComm_t comm, int *rank))                                               \
    X(ncclResult_t, CommGetAsyncError, 0, (ncclComm_t comm, ncclResult_t * async_error))                              \
    X(ncclResult_t, AllReduce, 0,                                                                                      \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,   \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, Broadcast, 0,                                                                                      \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,         \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, Reduce, 0,                                                                                         \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclRedOp_t op, int root,          \
       ncclComm_t comm, cudaStream_t stream))                                                                          \
    X(ncclResult_t, AllGather, 0,                                                                                      \
      (const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype, ncclComm_t comm,              \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, ReduceScatter, 0,                                                                                  \
      (const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype, ncclRedOp_t op,               \
       ncclComm_t comm, cudaStream_t stream))                                                                          \
    X(ncclResult_t, Send, 0,                                                                                           \
      (const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream))   \
    X(ncclResult_t, Recv, 0,                                                                                           \
      (void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm, cudaStream_t stream))         \
    X(ncclResult_t, GroupStart, 0, (void))                                                                             \
    X(ncclResult_t, GroupEnd, 0, (void))                                                                               \
    X(const char *, GetErrorString, 0, (ncclResult_t result))                                                          \
    X(ncclResult_t, CommInitRankConfig, 21400,                                                                         \
      (ncclComm_t * comm, int nranks, ncclUniqueId id, int rank, ncclConfig_t *config))                               \
    X(ncclResult_t, CommFinalize, 21400, (ncclComm_t comm))                                                            \
    X(ncclResult_t, CommSplit, 21800, (ncclComm_t comm, int color, int key, ncclComm_t *newcomm, ncclConfig_t *config)) \
    X(const char *, GetLastError, 21300, (ncclComm_t comm))                                                            \
    X(ncclResult_t, CommInitRankScalable, 22300,                                                                       \
      (ncclComm_t * comm, int nranks, int rank, int nids, ncclUniqueId *ids, ncclConfig_t *config))                   \
    X(ncclResult_t, RedOpCreatePreMulSum, 21100,                                                                       \
      (ncclRedOp_t * op, void *scalar, ncclDataType_t datatype, ncclScalarResidence_t residence, ncclComm_t comm))    \
    X(ncclResult_t, RedOpDestroy, 21100, (ncclRedOp_t op, ncclComm_t comm))                                            \
    X(ncclResult_t, AlltoAll, 22800,                                                                                   \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, ncclComm_t comm,                  \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, Gather, 22800,                                                                                     \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,         \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, Scatter, 22800,                                                                                    \
      (const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,         \
       cudaStream_t stream))                                                                                           \
    X(ncclResult_t, CommShrink, 22700,                                                                                 \
      (ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm, ncclConfig_t *config, int flags))             \
    X(ncclResult_t, CommRevoke, 22807, (ncclComm_t comm, int flags))                                                   \
    X(ncclResult_t, MemAlloc, 21900, (void **ptr, size_t size))                                                        \
    X(ncclResult_t, MemFree, 21900, (void *ptr))                                                                       \
    X(ncclResult_t, CommRegister, 21900, (const ncclComm_t comm, void *buff, size_t size, void **handle))              \
    X(ncclResult_t, CommDeregister, 21900, (const ncclComm_t comm, void *handle))                                      \
    X(ncclResult_t, CommWindowRegister, 22700,                                                                         \
      (ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win, int winFlags))                                     \
    X(ncclResult_t, CommWindowDeregister, 22700, (ncclComm_t comm, ncclWindow_t win))

#endif
