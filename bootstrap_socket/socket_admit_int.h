/* Internal: admitting the ranks of a socket rendezvous at its hub (rank 0, or a served
 * rendezvous), connection by connection and fairly (bootstrap_socket/socket_admit.c): each
 * connection not yet admitted has its own short deadline per step, the oldest waiting one is
 * evicted when more come than the table holds, strangers are dropped and logged, and with a job
 * secret a rank proves it holds it before it is admitted. Event-driven: the caller polls the
 * descriptors it is given with its own, then hands the events back. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_ADMIT_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_ADMIT_INT_H_

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_state_int.h"

#define HN_SK_PEER_BYTES 80

/* A connection that said a hello of the job (and, with a secret, proved it). */
typedef struct {
    int fd;
    uint32_t rank;  /* its rank in the job: 0 .. nranks-1 (a served rendezvous), 1 .. nranks-1 (rank 0's) */
    uint32_t flags; /* its hello's (HN_SK_HELLO_FRESH: its process's first socket bootstrap) */
    uint8_t theirs[HN_SK_NONCE], ours[HN_SK_NONCE]; /* its nonce; the hub's challenge (zeros without a secret) */
    char peer[HN_SK_PEER_BYTES];                    /* "addr:port" */
} hn_sk_admitted_t;

/* Takes an admitted connection (its fd is the taker's from then on, on success or failure). An
 * error ends the admission with that message (rank 0's "rank R connected twice"). */
typedef hidet_nccl_status_t (*hn_sk_take_t)(void *ctx, const hn_sk_admitted_t *a, char *msg, size_t n);

typedef struct hn_sk_admit hn_sk_admit_t;

/* Admission of job's ranks (key, size, secret: read, not kept) from the listening socket lfd (not
 * owned). rank 0's hub admits ranks 1 .. nranks-1; a served one (serves_rank0) 0 .. nranks-1. Its
 * table of connections waiting holds up to HN_SK_PENDING_MAX, as many as the open-files limit
 * leaves (the soft limit raised to the hard one where it is lower); a limit that leaves fewer
 * than HN_SK_PENDING_MIN is HIDET_NCCL_ERROR_SYSTEM naming it and what the job needs. */
hidet_nccl_status_t hidet_nccl__sk_admit_new(const hn_sk_state_t *job, int lfd, int serves_rank0, hn_sk_take_t take,
                                             void *ctx, hn_sk_admit_t **out, char *msg, size_t n);
/* From now on admitted connections go to take (with ctx). */
void hidet_nccl__sk_admit_retake(hn_sk_admit_t *a, hn_sk_take_t take, void *ctx);
/* Closes every connection still waiting (not lfd) and frees a. NULL: nothing. */
void hidet_nccl__sk_admit_free(hn_sk_admit_t *a);

/* How many pollfds hidet_nccl__sk_admit_poll fills (free slots among them: poll them with
 * hidet_nccl__sk_poll, which passes poll(2) the descriptors alone). */
int hidet_nccl__sk_admit_nfds(const hn_sk_admit_t *a);
/* The listening socket and every waiting connection into fds (free slots: fd -1); *next lowered
 * to the end of the earliest step. */
void hidet_nccl__sk_admit_poll(const hn_sk_admit_t *a, struct pollfd *fds, double *next);
/* After the caller's poll over fds: reads what came, accepts, admits (through take), drops what is
 * past its step. deadline: no send waits past it. */
hidet_nccl_status_t hidet_nccl__sk_admit_events(hn_sk_admit_t *a, const struct pollfd *fds, double deadline,
                                                char *msg, size_t n);
/* Tells a peer that spoke this protocol why it is not taken (a refuse message: neither the job's key
 * nor its size), at once or not at all (a few bytes into a socket: 0.1 s at most). */
void hidet_nccl__sk_send_refuse(int fd, const char *told);

/* The connections dropped so far, and the last reason ("" when none). */
long hidet_nccl__sk_admit_dropped(const hn_sk_admit_t *a, const char **last);

#endif
