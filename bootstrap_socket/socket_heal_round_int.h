/* Internal: a served rendezvous' session taking restarted ranks back in
 * (bootstrap_socket/socket_heal_round.c; docs/bootstrap_socket.md, "Healing"). A formed session
 * keeps one joiner per job rank it lacks (the rank died, or a recovery or heal round left it
 * out; not one that said bye) until the members' next heal round: the round is decided as soon
 * as every live member joined it and every job rank it lacks has a joiner, at the latest the
 * first heal's wait after it began; the members that joined and the joiners go on, numbered in
 * job order, and all of them get the same decision. */
#ifndef HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HEAL_ROUND_INT_H_
#define HIDET_NCCL_BOOTSTRAP_SOCKET_SOCKET_HEAL_ROUND_INT_H_

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "bootstrap_socket/socket_members_int.h"

/* Whether a hello of job rank `rank` may join formed session s: 0 no (s is not formed, or has the
 * rank live, or the rank left well); 1 yes (s lacks the rank and no joiner for it waits); 2 s
 * lacks it but a joiner for it waits already (peer: where that one connected from). */
int hidet_nccl__sk_heal_lacks(const struct hn_sk_session *s, uint32_t rank, char *peer, size_t cap);
/* 1 when job rank `rank` is a live member of formed session s (peer: where it connected from). */
int hidet_nccl__sk_heal_live(const struct hn_sk_session *s, uint32_t rank, char *peer, size_t cap);
/* Keeps an admitted connection of a rank s lacks (hidet_nccl__sk_heal_lacks said 1) as its joiner,
 * and welcomes it as one (its fd is the session's). */
void hidet_nccl__sk_heal_add_joiner(struct hn_sk_session *s, const hn_sk_admitted_t *a);
/* Member i's heal message m: it begins heal round m->tag, or joins the one under way. */
void hidet_nccl__sk_heal_on_heal(struct hn_sk_session *s, int i, const hidet_nccl__sk_msg_t *m);
/* Decides the heal round under way when it is complete or its wait is over. */
void hidet_nccl__sk_heal_maybe_decide(struct hn_sk_session *s);
/* After the poll: the joiners' slots (fds[job rank], as hidet_nccl__sk_session_poll filled them).
 * A joiner that closes is dropped; one that sends anything is dropped too (a joiner waits). */
void hidet_nccl__sk_heal_joiner_events(struct hn_sk_session *s, const struct pollfd *fds);
/* Joiners of a session whose members are all gone are told there is nobody to heal with. */
void hidet_nccl__sk_heal_orphans(struct hn_sk_session *s);

#endif
