/* Internal: the socket rendezvous' state, and how its ranks meet (bootstrap_socket/
 * socket_handshake.c): rank 0 admits the job's ranks (bootstrap_socket/socket_admit.c), or every
 * rank is a client of a served rendezvous; with a job secret each side proves it holds it
 * (docs/bootstrap_socket.md). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_format_int.h"
#include "core/base/kit.h"

#define HN_SK_PENDING_MAX 1024 /* connections waiting at once at the hub, beside the ranks already admitted */

/* A rank's side of the rendezvous (and, at a served rendezvous, the job it serves: key, size,
 * secret). After a recovery round, rank and nranks are the rank's place among the survivors. */
typedef struct {
    char addr[256];
    int port;
    char key[HN_SK_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    int job_rank;   /* the rank at init (messages name it too once the ranks are renumbered) */
    int served;     /* 1: the hub is a served rendezvous (hidet-nccl-run): every rank is a client */
    uint64_t epoch; /* recovery rounds done */
    uint8_t session[HN_SK_NONCE];
    uint8_t secret[HN_SECRET_MAX]; /* the job's secret; secret_len 0: none (unauthenticated) */
    size_t secret_len;
    int *fds;       /* rank 0's hub: fds[r] of rank r (fds[0] unused; -1: gone); a client: fds[0], to the hub */
    int *jobs;      /* rank 0's hub: the job rank of each rank (after recovery rounds) */
    uint64_t *joins; /* rank 0's hub: the recovery round a rank joined while rank 0 was in a round (0: none) */
    uint32_t *waits; /* ... and the wait it asked for, in ms */
    int *left;      /* rank 0's hub: connections of ranks a recovery round left out, closed at finalize */
    int n_left;
    uint64_t seen_epoch; /* a client: a decision read in a round (this rank had not joined), and its bits */
    uint8_t *seen_bits;
} hn_sk_state_t;

/* Rank 0's hub: listens, takes every other rank's hello (and, with a secret, its proof), drops
 * and logs whatever else connects, then welcomes each rank; until the deadline. */
hidet_nccl_status_t hidet_nccl__sk_root_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);
/* A client (a rank other than 0, or any rank of a served rendezvous): connects, says hello (and
 * proves the secret), and takes the hub's welcome (which, with a secret, proves it too); connects
 * again when the hub closed it before a welcome. */
hidet_nccl_status_t hidet_nccl__sk_client_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);

/* "rank 0" or "the rendezvous (hidet-nccl-run)": who the hub is, for a client's messages. */
const char *hidet_nccl__sk_hub(const hn_sk_state_t *s);

#endif
