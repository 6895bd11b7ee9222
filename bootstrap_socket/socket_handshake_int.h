/* Internal: how the socket rendezvous' ranks meet (bootstrap_socket/socket_handshake.c): rank 0
 * admits the job's ranks (bootstrap_socket/socket_admit.c), or every rank is a client of a served
 * rendezvous; with a job secret each side proves it holds it (docs/bootstrap_socket.md). */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HANDSHAKE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_state_int.h"


/* Rank 0's hub: listens, takes every other rank's hello (and, with a secret, its proof), drops
 * and logs whatever else connects, then welcomes each rank; until the deadline. */
hidet_nccl_status_t hidet_nccl__sk_root_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);
/* Rank 0's hub once the job formed: without blocking, answers what came to the ports this process's
 * hubs keep (a rank restarted, or started twice: authenticated as any rank, then refused, saying
 * that a socket rendezvous that lives in rank 0 cannot take a rank back in; logged). Called by rank
 * 0's calls; a later bootstrap of the process on the same port takes the port over. */
void hidet_nccl__sk_hub_late(hn_sk_state_t *s);
/* Closes what hidet_nccl__sk_hub_late holds (the port, connections waiting). */
void hidet_nccl__sk_hub_late_close(hn_sk_state_t *s);

/* A client (a rank other than 0, or any rank of a served rendezvous): connects, says hello (and
 * proves the secret), and takes the hub's welcome (which, with a secret, proves it too); connects
 * again when the hub closed it before a welcome. */
hidet_nccl_status_t hidet_nccl__sk_client_handshake(hn_sk_state_t *s, double deadline, char *msg, size_t n);

#endif
