/* Internal: what a session of a served rendezvous holds (bootstrap_socket/socket_session.c runs
 * it, socket_heal_round.c takes restarted ranks back in), and the few things both do to its
 * members (bootstrap_socket/socket_members.c): tell them, send them a message, name them, keep a
 * connection that is no longer a member's until its rank closes it. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_MEMBERS_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_MEMBERS_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_admit_int.h"
#include "bootstrap_socket/socket_conn_int.h"

typedef enum { HN_SS_ADMITTING, HN_SS_RUNNING, HN_SS_BROKEN, HN_SS_RECOVERING, HN_SS_HEALING, HN_SS_CLOSING } hn_ss_state_t;

typedef struct {
    hn_sk_conn_t c; /* fd -1: gone */
    int job_rank;
    int joined; /* the recovery or heal round under way */
    uint8_t theirs[HN_SK_NONCE], ours[HN_SK_NONCE];
    char peer[HN_SK_PEER_BYTES];
} hn_sk_member_t;

struct hn_sk_session {
    hn_sk_state_t job; /* key, size, secret, port */
    int id;
    hn_ss_state_t state;
    double admit_s, admit_until;
    uint8_t nonce[HN_SK_NONCE];
    int world, admitted;
    hn_sk_member_t *m; /* admitting: by job rank; then the first `world` are the ranks, in job order */
    uint64_t epoch, last_tag;
    int any_tag;
    /* an allgather under way */
    int ag_on, ag_count;
    uint64_t ag_tag;
    size_t ag_bytes;
    uint8_t *ag_buf;
    unsigned char *ag_got;
    /* a recovery or heal round under way */
    uint64_t r_epoch;
    double r_start, r_until;
    /* restarted ranks waiting for a heal round: jn[job rank] (fd -1: none); the job ranks that left
     * well (a bye: a restarted process does not take them back) */
    hn_sk_member_t *jn;
    int n_joiners;
    unsigned char *bye;
    /* connections left out or refused: read until their ranks close them */
    hn_sk_conn_t *linger;
    int n_linger, cap_linger;
};

/* 1 while member i (of the current numbering) is connected. */
static inline int hidet_nccl__sk_ms_alive(const struct hn_sk_session *s, int i) { return s->m[i].c.fd >= 0; }

/* "rank 2 (job rank 3)", or "rank 2" while the numbers are the job's. */
const char *hidet_nccl__sk_ms_who(const struct hn_sk_session *s, int i, char *out, size_t cap);
/* A message of the session (its key and nonce; world as given; sender 0) to c. */
void hidet_nccl__sk_ms_send(struct hn_sk_session *s, hn_sk_conn_t *c, int kind, uint32_t world, uint64_t tag,
                            const void *body, size_t bytes);
/* A fail to member i (i < 0: every live member but except); epoch: the round it announces (news
 * for a rank waiting on a communicator: socket_news.c), 0 for any other word. */
void hidet_nccl__sk_ms_tell(struct hn_sk_session *s, int i, int except, uint64_t epoch, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* c is no member's any more: it stays open (its rank reads what was sent it, then closes it)
 * while there is room, else it is closed; c is left closed-empty. */
void hidet_nccl__sk_ms_linger(struct hn_sk_session *s, hn_sk_conn_t *c);
/* The allgather under way, if any, is dropped. */
void hidet_nccl__sk_ms_end_allgather(struct hn_sk_session *s);

#endif
