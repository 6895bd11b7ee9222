/* Internal: the own all_reduce kernels' workspaces (core/mem/mem_own.c): one per communicator
 * that takes them, each rank's mapped on every peer by CUDA IPC, the handles exchanged
 * through the communicator; released when the communicator goes, freed once every peer has
 * let go of it. */
#ifndef HIDET_NCCL_CORE_MEM_MEM_OWN_INT_H_
#define HIDET_NCCL_CORE_MEM_MEM_OWN_INT_H_

#include <cuda_runtime_api.h>
#include <nccl.h>

#include "core/mem/own_layout_int.h"
#include "core/nccl/nccl_loader_int.h"

typedef struct hn_own {
    int comm_id, device, rank, nranks;
    char *ws[HN_OWN_MAX_RANKS]; /* ws[rank]: this rank's (cudaMalloc); the others mapped */
    unsigned *abort_host;       /* host-mapped word the kernels' waits read: 1 when aborted */
    unsigned *abort_dev;
    cudaEvent_t order;        /* recorded after the last own kernel not in a graph capture */
    cudaStream_t last_stream; /* its stream (a call on another one waits for the event) */
    int recorded;
} hn_own_t;

/* Makes comm's workspaces (collective: every rank of comm_id calls). *own is the workspace,
 * or NULL with why (the same on every rank: "rank 1: ..." when one rank could not) when the
 * own kernels cannot run on this communicator: not 2 to 8 ranks, ranks on different hosts, no
 * CUDA IPC or peer access. An error only when the exchange itself failed (NCCL, deadline). */
hidet_nccl_status_t hidet_nccl__own_make(const hn_nccl_t *n, ncclComm_t comm, int comm_id, int rank, int nranks,
                                         hn_own_t **own, char *why, size_t why_len);

/* Lets go of a workspace: its kernels finished (the device synchronized, against the
 * deadline), the peers' mappings closed, this rank's memory freed once every peer has let go
 * of it (else kept and tried again at later releases and at finalize). Abandon (the
 * communicator is being aborted), an aborted workspace, or a deadline passed: the kernels are
 * told to stop waiting and the memory is kept. */
void hidet_nccl__own_release(hn_own_t *own, int abandon);

/* Tells the kernels to stop waiting for peers (the communicator failed): the word their waits
 * read. No CUDA call: safe under the tables' lock. */
void hidet_nccl__own_abort(hn_own_t *own);

/* At finalize: workspaces still held for a peer freed if it let go meanwhile (a short wait),
 * else left (their number at INFO). */
void hidet_nccl__own_finalize(void);

#endif
