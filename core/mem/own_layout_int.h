/* Internal: the own all_reduce kernels' workspace and arguments, shared by the host side
 * (core/mem/mem_own.c maps it, core/coll/own_all_reduce.c launches) and the device code
 * (core/coll/own_kernels.cu). Plain C: no CUDA or NCCL header.
 *
 * Every rank has one workspace (cudaMalloc, mapped on its peers by CUDA IPC):
 *   [FLAGS]  uint32 [BLOCKS][MAX_RANKS]: block b of rank p writes its barrier count into
 *            flags[b][p] of every rank (its own included);
 *   [SEQ]    uint32 [BLOCKS]: barriers block b has passed (written only by this rank);
 *   [CALLS]  uint32 [BLOCKS]: calls block b has made: which staging half the next one uses;
 *   [DONE]   uint32 [MAX_RANKS]: rank p writes 1 into done[p] when it lets go of this workspace
 *            (its kernels finished, its mapping about to close): freed when all have;
 *   [STAGE]  two halves of STAGE_BYTES: a call copies its input into one half (the other than
 *            the previous call's), peers read it there. Two halves make one barrier per
 *            phase enough: when a rank passes call k+1's first barrier, every peer has begun
 *            call k+1 and so finished call k, whose half call k+2 overwrites.
 * Every call launches BLOCKS blocks, so that block b's counters advance alike on every rank. */
#ifndef HIDET_NCCL_CORE_MEM_OWN_LAYOUT_INT_H_
#define HIDET_NCCL_CORE_MEM_OWN_LAYOUT_INT_H_

#define HN_OWN_MAX_RANKS 8
#define HN_OWN_BLOCKS 32
#define HN_OWN_THREADS 512
#define HN_OWN_FLAGS_OFFSET 0
#define HN_OWN_SEQ_OFFSET 4096
#define HN_OWN_CALLS_OFFSET 8192
#define HN_OWN_DONE_OFFSET 12288
#define HN_OWN_STAGE_OFFSET 65536
#define HN_OWN_STAGE_BYTES (4u << 20)
#define HN_OWN_WORKSPACE_BYTES (HN_OWN_STAGE_OFFSET + 2u * HN_OWN_STAGE_BYTES)

/* The kernels' one parameter. */
typedef struct {
    const void *in;
    void *out;
    unsigned long long count;          /* elements of the kernel's type */
    char *ws[HN_OWN_MAX_RANKS];        /* every rank's workspace as this rank maps it */
    const volatile unsigned *abort;    /* host-mapped; nonzero: the communicator was aborted, stop waiting */
    int rank, nranks;
} hn_own_args_t;

#endif
