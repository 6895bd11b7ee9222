/* Internal: the socket rendezvous' state: a rank's side of it, and (at a hub) the job it admits.
 * A header alone: every file of bootstrap_socket/ may hold one. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_STATE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_STATE_INT_H_

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "bootstrap_socket/socket_format_int.h"
#include "core/base/kit.h"

#define HN_SK_PENDING_MAX 1024 /* connections waiting at once at the hub, beside the ranks already admitted */
#define HN_SK_PENDING_MIN 16   /* ... at least: an open-files limit that leaves fewer is too small for the job */

/* A rank's side of the rendezvous (and, at a served rendezvous, the job it serves: key, size,
 * secret). After a recovery round, rank and nranks are the rank's place among the survivors. */
typedef struct {
    char addr[256];
    int port;
    char key[HN_SK_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    int job_rank;   /* the rank at init (messages name it too once the ranks are renumbered) */
    int job_nranks; /* the number of ranks at init: the job's */
    int served;     /* 1: the hub is a served rendezvous (hidet-nccl-run): every rank is a client */
    int joining;    /* 1: a restarted rank the served rendezvous took as a joiner, until its heal round */
    uint64_t epoch; /* recovery and heal rounds done (a joiner: 0 until its heal round) */
    uint8_t session[HN_SK_NONCE];
    uint8_t secret[HN_SECRET_MAX]; /* the job's secret; secret_len 0: none (unauthenticated) */
    size_t secret_len;
    int *fds;       /* rank 0's hub: fds[r] of rank r (fds[0] unused; -1: gone); a client: fds[0], to the hub */
    int *jobs;      /* rank 0's hub: the job rank of each rank (after recovery rounds) */
    uint64_t *joins; /* rank 0's hub: the recovery round a rank joined while rank 0 was in a round (0: none) */
    uint32_t *waits; /* ... and the wait it asked for, in ms */
    int *left;      /* rank 0's hub: connections of ranks a recovery round left out, closed at finalize */
    int n_left;
    /* rank 0's hub, once the job formed: its port stays open, so a rank that comes late (restarted) is
     * told why it cannot be taken in (socket_handshake.c, hidet_nccl__sk_hub_late) */
    int lfd;
    struct hn_sk_admit *late;
    struct pollfd *late_fds;
    void *late_poller;
    uint64_t seen_epoch; /* a client: a decision read in a round (this rank had not joined), its kind and bits */
    int seen_kind;       /* HN_SK_KIND_DECIDE (bits of the numbering then) or HN_SK_KIND_HEALED (the job's) */
    uint8_t *seen_bits;
} hn_sk_state_t;

/* Why a socket bootstrap without a served rendezvous cannot heal. */
#define HN_SK_HEAL_UNSERVED                                                                                             \
    "the socket rendezvous lives in rank 0 here (no hidet-nccl-run serves it), and a restarted rank cannot be taken "  \
    "back in there: start the job with hidet-nccl-run --rendezvous socket (one node) or --master-addr/--master-port " \
    "(several), whose served rendezvous outlives any rank and heals"

/* What a hub keeps of the job it serves: key, address, port, size, secret. */
static inline void hidet_nccl__sk_job_copy(hn_sk_state_t *to, const hn_sk_state_t *job) {
    snprintf(to->key, sizeof to->key, "%s", job->key);
    snprintf(to->addr, sizeof to->addr, "%s", job->addr);
    to->port = job->port;
    to->nranks = job->nranks;
    memcpy(to->secret, job->secret, job->secret_len);
    to->secret_len = job->secret_len;
}

/* "rank 0" or "the rendezvous (hidet-nccl-run)": who the hub is, for a client's messages. */
static inline const char *hidet_nccl__sk_hub(const hn_sk_state_t *s) {
    return s->served ? "the rendezvous (hidet-nccl-run)" : "rank 0";
}

#endif
