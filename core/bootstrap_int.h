/* Internal: the bootstrap handle. */
#ifndef HIDET_NCCL_CORE_BOOTSTRAP_INT_H_
#define HIDET_NCCL_CORE_BOOTSTRAP_INT_H_

#include "hidet_nccl/bootstrap.h"

struct hidet_nccl_bootstrap {
    hidet_nccl_bootstrap_v1_t ops;
    void *state;
    void *dl_handle; /* a loaded plug-in, closed by destroy */
    uint64_t next_tag;
};

/* The backend's rank and size (checked to be consistent), and local rank. */
hidet_nccl_status_t hidet_nccl__bootstrap_rank(hidet_nccl_bootstrap_h bs, int *rank, int *size);
hidet_nccl_status_t hidet_nccl__bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size);

/* The backend's broadcast/allgather with the next tag; the backend's message, if any,
 * becomes the thread's message. */
hidet_nccl_status_t hidet_nccl__bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                    double timeout_s);
hidet_nccl_status_t hidet_nccl__bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                    size_t bytes, double timeout_s);

/* hidet_nccl_comm_init over bs, then bs destroyed: the start of hidet_nccl_init and
 * hidet_nccl_mpi_comm_init. When init fails its message is kept over the release's
 * (core/comm_init_bootstrap.c). */
hidet_nccl_status_t hidet_nccl__comm_init_then_release(hidet_nccl_bootstrap_h bs, const hidet_nccl_init_options_t *options,
                                                       int *comm_id);

#endif
