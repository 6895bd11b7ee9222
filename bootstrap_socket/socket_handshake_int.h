/* Internal: the socket rendezvous' state, and how its ranks meet (bootstrap_socket/
 * socket_handshake.c): rank 0 admits the job's ranks, fairly and against a deadline per
 * connection; with a job secret each side proves it holds it (docs/bootstrap_socket.md). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_format_int.h"
#include "core/base/kit.h"

#define HN_SK_PENDING_MAX 1024 /* connections waiting at once at rank 0, beside the ranks already admitted */

typedef struct {
    char addr[256];
    int port;
    char key[HN_SK_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    uint8_t session[HN_SK_NONCE];
    uint8_t secret[HN_SECRET_MAX]; /* the job's secret; secret_len 0: none (unauthenticated) */
    size_t secret_len;
    int *fds; /* rank 0: fds[r] of rank r (fds[0] unused); the others: fds[0], to rank 0 */
} hn_sk_state_t;

/* Rank 0: listens, takes every other rank's hello (and, with a secret, its proof), drops and
 * logs whatever else connects, then welcomes each rank; until the deadline. */
hidet_nccl_status_t hidet_nccl__sk_root_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);
/* Another rank: connects, says hello (and proves the secret), and takes rank 0's welcome (which,
 * with a secret, proves it too); connects again when rank 0 closed it before a welcome. */
hidet_nccl_status_t hidet_nccl__sk_client_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);

#endif
