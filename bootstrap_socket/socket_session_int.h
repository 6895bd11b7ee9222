/* Internal: one bootstrap of a job at its served rendezvous (bootstrap_socket/socket_session.c).
 * Every hidet_nccl_bootstrap of the job's ranks is a session: the k-th connection a rank makes
 * belongs to the k-th session that lacks it, so the ranks' bootstraps, made in the same order on
 * each, meet in order. A session admits every rank, welcomes each, relays broadcasts and
 * allgathers, learns at once of a rank whose connection closes (and tells the others), and is the
 * one decider of its recovery rounds. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_SESSION_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_SESSION_INT_H_

#include <poll.h>

#include "bootstrap_socket/socket_admit_int.h"
#include "bootstrap_socket/socket_conn_int.h"

typedef struct hn_sk_session hn_sk_session_t;

/* A session of job (key, size, secret: copied), numbered id, whose ranks must all come within
 * admit_s seconds. NULL when out of memory. */
hn_sk_session_t *hidet_nccl__sk_session_new(const hn_sk_state_t *job, int id, double admit_s);
void hidet_nccl__sk_session_free(hn_sk_session_t *s);
/* 1 while the session waits for rank `rank` to come. */
int hidet_nccl__sk_session_lacks(const hn_sk_session_t *s, uint32_t rank);
/* Gives it an admitted connection of a rank it lacks (its fd is the session's); once every rank
 * is in, each is welcomed. */
void hidet_nccl__sk_session_add(hn_sk_session_t *s, const hn_sk_admitted_t *a);
/* Before a hello of job rank `rank` is placed: what waits on that rank's connection in this
 * formed session is read (its bye, its end), so a rank that died is seen as dead, and one that left
 * well as such. Nothing while admitting. */
void hidet_nccl__sk_session_catch_up(hn_sk_session_t *s, uint32_t rank);
/* How many pollfds its connections take now, and those into fds; *next lowered to its next timer. */
int hidet_nccl__sk_session_nfds(const hn_sk_session_t *s);
void hidet_nccl__sk_session_poll(const hn_sk_session_t *s, struct pollfd *fds, double *next);
/* After the poll: what came on its connections (fds as filled), and its timers. */
void hidet_nccl__sk_session_events(hn_sk_session_t *s, const struct pollfd *fds);
/* The rendezvous stops: a session still waiting for ranks refuses those that came, saying which
 * never did (logged too), before it is freed. Nothing for a session in any other state. */
void hidet_nccl__sk_session_end(hn_sk_session_t *s);
/* 1 when nothing is left of it (every connection closed): free it. */
int hidet_nccl__sk_session_over(const hn_sk_session_t *s);

#endif
