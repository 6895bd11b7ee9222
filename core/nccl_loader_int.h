/* Internal: the table of NCCL functions resolved at run time. */
#ifndef HIDET_NCCL_CORE_NCCL_LOADER_INT_H_
#define HIDET_NCCL_CORE_NCCL_LOADER_INT_H_

#include <nccl.h>

#include "hidet_nccl/hidet_nccl.h"

typedef struct {
    /* Required: present in every NCCL 2.x this library supports (2.7 and newer: send/recv). */
    ncclResult_t (*GetVersion)(int *version);
    ncclResult_t (*GetUniqueId)(ncclUniqueId *id);
    ncclResult_t (*CommInitRank)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
    ncclResult_t (*CommDestroy)(ncclComm_t comm);
    ncclResult_t (*CommAbort)(ncclComm_t comm);
    ncclResult_t (*CommCount)(const ncclComm_t comm, int *count);
    ncclResult_t (*CommCuDevice)(const ncclComm_t comm, int *device);
    ncclResult_t (*CommUserRank)(const ncclComm_t comm, int *rank);
    ncclResult_t (*CommGetAsyncError)(ncclComm_t comm, ncclResult_t *async_error);
    ncclResult_t (*AllReduce)(const void *sendbuff, void *recvbuff, size_t count,
                              ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                              cudaStream_t stream);
    ncclResult_t (*Broadcast)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Reduce)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                           ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*AllGather)(const void *sendbuff, void *recvbuff, size_t sendcount, ncclDataType_t datatype,
                              ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*ReduceScatter)(const void *sendbuff, void *recvbuff, size_t recvcount, ncclDataType_t datatype,
                                  ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream);
    ncclResult_t (*Send)(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                         cudaStream_t stream);
    ncclResult_t (*Recv)(void *recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
                         cudaStream_t stream);
    ncclResult_t (*GroupStart)(void);
    ncclResult_t (*GroupEnd)(void);
    const char *(*GetErrorString)(ncclResult_t result);
    /* Optional: NULL when the loaded NCCL is older than the version named. */
    ncclResult_t (*CommInitRankConfig)(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                       ncclConfig_t *config);                  /* 2.14 */
    ncclResult_t (*CommFinalize)(ncclComm_t comm);                             /* 2.14 */
    ncclResult_t (*CommSplit)(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                              ncclConfig_t *config);                           /* 2.18 */
    const char *(*GetLastError)(ncclComm_t comm);                              /* 2.13 */
    ncclResult_t (*CommInitRankScalable)(ncclComm_t *comm, int nranks, int rank, int nids, ncclUniqueId *ids,
                                         ncclConfig_t *config);                /* 2.23 */
    ncclResult_t (*RedOpCreatePreMulSum)(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                         ncclScalarResidence_t residence, ncclComm_t comm); /* 2.11 */
    ncclResult_t (*RedOpDestroy)(ncclRedOp_t op, ncclComm_t comm);             /* 2.11 */
    ncclResult_t (*AlltoAll)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype,
                             ncclComm_t comm, cudaStream_t stream);            /* 2.28 */
    ncclResult_t (*Gather)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                           ncclComm_t comm, cudaStream_t stream);              /* 2.28 */
    ncclResult_t (*Scatter)(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t datatype, int root,
                            ncclComm_t comm, cudaStream_t stream);             /* 2.28 */
    ncclResult_t (*CommShrink)(ncclComm_t comm, int *exclude, int nexclude, ncclComm_t *newcomm,
                               ncclConfig_t *config, int flags);               /* 2.27 */
    ncclResult_t (*CommRevoke)(ncclComm_t comm, int flags);                    /* 2.28.7 */
    ncclResult_t (*MemAlloc)(void **ptr, size_t size);                         /* 2.19 */
    ncclResult_t (*MemFree)(void *ptr);                                        /* 2.19 */
    ncclResult_t (*CommRegister)(const ncclComm_t comm, void *buff, size_t size, void **handle); /* 2.19 */
    ncclResult_t (*CommDeregister)(const ncclComm_t comm, void *handle);       /* 2.19 */
    ncclResult_t (*CommWindowRegister)(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
                                       int winFlags);                          /* 2.27 */
    ncclResult_t (*CommWindowDeregister)(ncclComm_t comm, ncclWindow_t win);   /* 2.27 */
    /* Filled by the loader. */
    int version;      /* normalized: X*10000 + Y*100 + Z */
    char path[4096];  /* where it was loaded from */
} hn_nccl_t;

/* The names the last step gives the system loader (NULL-terminated). Tests replace it to
 * see the error of a search that finds nothing on a machine that has NCCL. */
extern const char *const *hidet_nccl__system_sonames;

/* Loads NCCL on first use (thread-safe) and returns the table, or fails with the list of
 * places searched. */
hidet_nccl_status_t hidet_nccl__nccl(const hn_nccl_t **out);

/* The table if loaded, else NULL; never loads (for fast paths after a successful init). */
const hn_nccl_t *hidet_nccl__nccl_loaded(void);

/* "ncclXxx failed: <NCCL's string> (<last error>)" into the thread's message. */
hidet_nccl_status_t hidet_nccl__nccl_fail(const char *func, const char *call, ncclResult_t r,
                                          ncclComm_t comm);

/* HIDET_NCCL_ERROR_UNSUPPORTED naming what needs which version (and call, the NCCL function)
 * unless the loaded NCCL has fn and is at least min_version (X*10000+Y*100+Z). */
hidet_nccl_status_t hidet_nccl__needs(const hn_nccl_t *n, const void *fn, int min_version, const char *what,
                                      const char *call);

#endif
