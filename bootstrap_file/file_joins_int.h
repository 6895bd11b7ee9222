/* Internal: the members' side of a recovery or heal round of the shared-file bootstrap
 * (file_recover.c, file_heal.c): every member puts its JOIN
 *   <dir>/hidet-nccl.<key>.<seq>.join.<r>          (r: its rank before the round; seq: the round's)
 * where none is; the decider is the lowest member that joined and lives (a lower one that dies
 * is taken over); what each member's join says, and whether its process is known gone, is
 * looked at here. What the decider decides, and from what, is the round's own. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_JOINS_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_JOINS_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootstrap_file/file_peers_int.h"
#include "bootstrap_file/file_state_int.h"
#include "core/base/kit.h"

#define HN_BF_PATH_BYTES 4400

/* One member's round: what it put, and what it saw of every other member. */
typedef struct {
    hn_bf_state_t *s;
    const char *what; /* "recovery" or "heal", for messages */
    uint64_t epoch;
    int n, me; /* the numbering before the round, this member's rank there */
    double wait_s;
    hn_poll_t poll;
    uint8_t nonce[HN_BF_NONCE];
    char join_path[HN_BF_PATH_BYTES], decision_path[HN_BF_PATH_BYTES];
    struct stat mine;      /* this rank's join as put */
    hn_bf_join_t *joins;   /* what each rank's join says (when joined) */
    unsigned char *joined; /* a join of this round is there */
    unsigned char *dead;   /* its process is known gone */
    struct stat *seen;     /* each join as last read: an unchanged one is not read again */
    char last[1024];       /* the last problem seen, for the messages */
    int left_out;          /* the decision did not name this join */
} hn_bf_joins_t;

/* The round's start on a member: its state (nonce, paths, the poll against timeout_s), then,
 * while this rank's presence is its own, what the roster and the presences say of the others,
 * and this rank's join, put where none is (a dead process's join, or this user's file that is
 * no join of this round, replaced; a live process's as this rank fails). On failure x holds
 * nothing to free. */
hidet_nccl_status_t hidet_nccl__bf_joins_begin(hn_bf_joins_t *x, hn_bf_state_t *s, const char *what, uint64_t epoch,
                                               double wait_s, double timeout_s, char *msg, size_t n);
/* Frees what begin took. */
void hidet_nccl__bf_joins_end(hn_bf_joins_t *x);

/* Removes this rank's join if it is still the one it put; with a mark (HN_BF_MARK_LEFTOUT),
 * renames it to that. */
void hidet_nccl__bf_joins_withdraw(const hn_bf_joins_t *x, const char *mark);

/* The rank this one waits for to decide (-1: this rank decides): the lowest rank below it that
 * joined and is not known dead, or that has neither joined nor is known dead while wait_s runs.
 * A rank that decides looks at every rank above it too. */
int hidet_nccl__bf_joins_scan(hn_bf_joins_t *x, double waited);
/* The decider's members are in: every rank above it joined or is known dead, or wait_s passed. */
int hidet_nccl__bf_joins_ready(const hn_bf_joins_t *x, double waited);
/* "as the decider, for ranks 2, 3 to join or be known dead" or the rank awaited (below >= 0),
 * for the timeout's message. */
void hidet_nccl__bf_joins_awaited(const hn_bf_joins_t *x, int below, char *out, size_t n);

/* Each rank's process as this round knows it (old: x->n): its join's, else what the bootstrap
 * saw of it. */
void hidet_nccl__bf_joins_known(const hn_bf_joins_t *x, hn_bf_peer_t *old);

/* A decision (or heal decision) of a later round of this bootstrap, of this job (its MAC, with a
 * secret), in the directory (its round in *later): the job went on without this rank. One
 * listing of the directory; a later decision an ended job left (stale) is removed on the way. */
int hidet_nccl__bf_joins_superseded(const hn_bf_joins_t *x, uint64_t *later);

#endif
