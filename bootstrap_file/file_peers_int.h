/* Internal: what a shared-file bootstrap knows of its ranks' processes, and the recovery round's
 * records (joins, decisions) as read from the directory, checked as every file is. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_PEERS_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_PEERS_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_state_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* Notes rank r's process, as a record of this job that ended well showed it. */
void hidet_nccl__bf_peer_note(hn_bf_state_t *s, int r, uint32_t pid, const char *host);
/* 1 if rank r's process is known and is a process of this host that is gone. */
int hidet_nccl__bf_peer_gone(const hn_bf_state_t *s, int r);

/* The plug-in's peer_lost: 1 (why in msg) when a rank's join of the next recovery round, this
 * job's and made by that rank's own process (as peer_left judges it), is in the directory. A dead process alone is not news (a rank that ended well is gone
 * too). Looks at HN_BF_PROBE_RANKS ranks' joins a call, in turn (one lstat each). */
#define HN_BF_PROBE_RANKS 16
int hidet_nccl__bf_peer_lost(void *state, char *msg, size_t n);

/* During a round: HIDET_NCCL_SUCCESS while rank r (the one awaited; role names it: "root",
 * "reader") may still come; HIDET_NCCL_ERROR_BOOTSTRAP, naming it, once it has left: its process,
 * known from an earlier round, is a process of this host that is gone, or it joined the next
 * recovery round (it gave this round up). Across hosts nothing can be seen: the deadline holds. */
hidet_nccl_status_t hidet_nccl__bf_peer_left(const hn_bf_state_t *s, int r, const char *role, char *msg, size_t n);

/* What a join says. */
typedef struct {
    uint8_t nonce[HN_BF_NONCE];
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_join_t;

/* Rank r's join of recovery round epoch in a world of `world` ranks (the numbering before that
 * round; epoch 0: the rank's presence), read at path (NULL: its place). 1 a join of this job,
 * round, world and rank (*j), 0 none, -1 refused (why: torn, corrupt, another round's or another
 * world's, not this user's file...), 3 a join whose MAC is not this job's secret's (a second
 * job with this key, or an ended one's; *j says who wrote it), never taken. */
int hidet_nccl__bf_join_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, int r, const char *path,
                             hn_bf_join_t *j, char *why, size_t why_bytes);

/* The decision of recovery round epoch (0: the roster) over `world` ranks:
 * 1 (*data malloc'ed, freed by the caller; *m points into it), 0 none, -1 refused, 3 another
 * job's (its MAC; *data and *m as for 1, freed by the caller too), as join_read. */
int hidet_nccl__bf_decision_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, uint8_t **data,
                                 hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes);
/* The heal decision of round epoch over the job's `world` ranks, as decision_read. */
int hidet_nccl__bf_heal_read(const hn_bf_state_t *s, uint64_t epoch, uint32_t world, uint8_t **data,
                             hidet_nccl__bf_msg_t *m, char *why, size_t why_bytes);
/* A file of this key at path parsed as a record of `kind` whatever its round, world or MAC (for
 * what an ended job left): 1 (*data, *len, *m; freed by the caller), else 0. */
int hidet_nccl__bf_record_read_any(const hn_bf_state_t *s, const char *path, int kind, uint8_t **data, size_t *len,
                                   hidet_nccl__bf_msg_t *m);

/* Whether a decision m found in the directory was left by a job that ended (its files stale, to
 * be removed) rather than made by this one: every process it keeps is a process of this host
 * that is gone, and
 *   HN_BF_STALE_FOREIGN     (not this round's, or another secret's): nothing more;
 *   HN_BF_STALE_THIS_ROUND  (this round's, valid): it keeps a rank as another process than the
 *                           one known as that rank (peers: the n ranks of the numbering before
 *                           the round, me among them);
 *   HN_BF_STALE_LATER       (a later round's, valid): every rank's process is known (but me's)
 *                           and it keeps none of them.
 * A decision of this job whose kept ranks all ended is never stale: it names the processes this
 * bootstrap knows (or ones it does not know, which proves nothing). Across hosts nothing is
 * stale (a process there cannot be seen gone). */
#define HN_BF_STALE_FOREIGN 0
#define HN_BF_STALE_THIS_ROUND 1
#define HN_BF_STALE_LATER 2
int hidet_nccl__bf_decision_stale(const hn_bf_peer_t *peers, int n, int me, const hidet_nccl__bf_msg_t *m, int how);

/* Rank 0 after a round it rooted that ended well (every rank's process known): puts the roster,
 * a decision of epoch 0 that keeps every rank with its process (nonces: the round's), where
 * survivors of a later death find who was where. Once per bootstrap; best effort (a roster that
 * cannot be put makes recovery wait for what it cannot see). */
void hidet_nccl__bf_roster_put(hn_bf_state_t *s, const uint8_t *nonces);
/* In the first recovery round: the roster fills what this process does not know of the other
 * ranks' processes, if it is this job's: it must name this very process as this rank. (A later
 * round's processes are those of the decision before it, taken when it was.) */
void hidet_nccl__bf_roster_read(hn_bf_state_t *s);

#endif
