/* Internal: the bootstrap handle and the core's calls on it (core/boot/bootstrap.c). */
#ifndef HIDET_NCCL_CORE_BOOT_BOOTSTRAP_INT_H_
#define HIDET_NCCL_CORE_BOOT_BOOTSTRAP_INT_H_

#include <stdatomic.h>

#include "core/base/kit.h"
#include "hidet_nccl/bootstrap.h"

struct hidet_nccl_bootstrap {
    hidet_nccl_bootstrap_t ops; /* the newest version; older plug-ins through an adapter */
    void *state;
    void *dl_handle; /* a loaded plug-in, closed by destroy */
    uint64_t next_tag;
    atomic_int refs;  /* the caller's, and one per communicator that keeps it for recovery */
    atomic_int busy;  /* HN_BS_ROUND: a recovery round is under way; HN_BS_PROBE: peer_lost is being asked */
    uint64_t epoch;   /* recovery and heal rounds done; tags restart at epoch << 32 after each */
    int left_out;     /* a recovery or heal round left this rank out: only destroy is taken */
    char left_why[256];
    int job_rank, job_size; /* rank_size right after init: this rank in the job's numbering */
    int *job_of;      /* job_of[place]: the job rank of each place of the current numbering */
    int joining;      /* init said joining (a restarted rank): the first collective is a heal round */
};

/* After a round: the places of the current numbering are the job ranks marked in members (job
 * size entries, as heal's) or, for a recovery, the old places marked in kept (old size entries). */
void hidet_nccl__bootstrap_renumber_kept(hidet_nccl_bootstrap_h bs, const unsigned char *kept, int old_size);
void hidet_nccl__bootstrap_renumber_members(hidet_nccl_bootstrap_h bs, const unsigned char *members);

/* One more holder of bs (a communicator kept for recovery); hidet_nccl_bootstrap_destroy drops
 * one, and the last finalizes. */
void hidet_nccl__bootstrap_keep(hidet_nccl_bootstrap_h bs);

#define HN_BS_ROUND 1
#define HN_BS_PROBE 2
/* The backend's peer_lost (0 without one, or while a round holds the bootstrap): 1 and why. */
int hidet_nccl__bootstrap_probe(hidet_nccl_bootstrap_h bs, char *why, size_t why_bytes);

/* hidet_nccl_bootstrap_create with init's deadline timeout_s (0: $HIDET_NCCL_TIMEOUT). */
hidet_nccl_status_t hidet_nccl__bootstrap_create_timed(const hidet_nccl_bootstrap_t *ops, const void *params,
                                                       double timeout_s, hidet_nccl_bootstrap_h *out);

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
