/* Internal: the socket rendezvous' rounds, broadcast and allgather, on either hub
 * (bootstrap_socket/socket_rounds.c), and what the recovery round shares with them: one
 * message of the session to a peer, and rank 0's hub telling the ranks that one is gone. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_ROUNDS_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_ROUNDS_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_state_int.h"

hidet_nccl_status_t hidet_nccl__sk_broadcast(hn_sk_state_t *s, void *buf, size_t bytes, int root, uint64_t tag,
                                             double timeout_s, char *msg, size_t n);
hidet_nccl_status_t hidet_nccl__sk_allgather(hn_sk_state_t *s, const void *send, void *recv, size_t bytes, uint64_t tag,
                                             double timeout_s, char *msg, size_t n);

/* A message of the session (its key, s->nranks, s->rank as sender, the session nonce) to fd before
 * the deadline. 0, or -1 and why. */
int hidet_nccl__sk_send_kind(const hn_sk_state_t *s, int fd, int kind, uint64_t tag, const void *body, size_t bytes,
                             double deadline, char *why, size_t why_bytes);

/* Rank 0's hub: tells every rank still connected (fail message) that the rounds cannot go on;
 * epoch: the recovery round that began (its tag: news for a rank waiting on a communicator), or 0. */
void hidet_nccl__sk_hub_tell(hn_sk_state_t *s, uint64_t epoch, const char *why);
/* Rank 0's hub: rank r's connection is over (closed: gone), and every other rank is told why. */
void hidet_nccl__sk_hub_lost(hn_sk_state_t *s, int r, const char *why);

/* "rank 2 (job rank 3)", or "rank 2" while the numbers are the job's. */
const char *hidet_nccl__sk_who(const hn_sk_state_t *s, int rank, int job_rank, char *out, size_t cap);

#endif
