/* Internal: the bootstrap handle, the built-in backends and the v1 adapter. */
#ifndef HIDET_NCCL_CORE_BOOTSTRAP_INT_H_
#define HIDET_NCCL_CORE_BOOTSTRAP_INT_H_

#include "core/kit.h"
#include "hidet_nccl/bootstrap.h"

struct hidet_nccl_bootstrap {
    hidet_nccl_bootstrap_t ops; /* the newest version; older plug-ins through an adapter */
    void *state;
    void *dl_handle; /* a loaded plug-in, closed by destroy */
    uint64_t next_tag;
};

/* The backends inside libhidet_nccl.a (core/bootstrap_table.c), for HIDET_NCCL_BOOTSTRAP=<name>
 * and, in this order, for the choice from the environment: the first whose setting is set. */
typedef struct {
    const char *name;
    const hidet_nccl_bootstrap_t *ops;
    hn_setting_t chosen_when_set; /* HN_NUM_SETTINGS: only by name */
} hn_builtin_bootstrap_t;
extern const hn_builtin_bootstrap_t hidet_nccl__builtin_bootstraps[];
extern const int hidet_nccl__num_builtin_bootstraps;

/* A version 1 plug-in as a version 2 one (core/bootstrap_v1.c): the adapter's init takes
 * an hn_v1_params_t. Its allgather is the plug-in's, or one broadcast from each rank. */
typedef struct {
    const hidet_nccl_bootstrap_v1_t *v1;
    const void *params;
} hn_v1_params_t;
extern const hidet_nccl_bootstrap_t hidet_nccl__bootstrap_v1_adapter;

/* hidet_nccl_bootstrap_create with init's deadline timeout_s (0: $HIDET_NCCL_TIMEOUT). */
hidet_nccl_status_t hidet_nccl__bootstrap_create_timed(const hidet_nccl_bootstrap_t *ops, const void *params,
                                                       double timeout_s, hidet_nccl_bootstrap_h *out);

/* hidet_nccl_comm_init over bs, then bs destroyed (hidet_nccl_init). When init fails its
 * message is kept over the release's (core/comm_init_bootstrap.c). */
hidet_nccl_status_t hidet_nccl__comm_init_then_release(hidet_nccl_bootstrap_h bs,
                                                       const hidet_nccl_init_options_t *options, int *comm_id);

/* The backend's rank and size (checked to be consistent), and local rank. */
hidet_nccl_status_t hidet_nccl__bootstrap_rank(hidet_nccl_bootstrap_h bs, int *rank, int *size);
hidet_nccl_status_t hidet_nccl__bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size);

/* The backend's broadcast/allgather with the next tag; the backend's message, if any,
 * becomes the thread's message. */
hidet_nccl_status_t hidet_nccl__bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                    double timeout_s);
hidet_nccl_status_t hidet_nccl__bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                    size_t bytes, double timeout_s);

#endif
