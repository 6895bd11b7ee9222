/* Internal: the shared-file bootstrap's heal round (docs/bootstrap_file.md, "Healing"): a rank
 * that died and was started again (a joiner: file_joining.c) is taken back in under its job rank.
 * Round E's files, beside the recovery rounds' (they share the epochs), numbered as the first
 * round of epoch E, and the joiners' requests (file_request_int.h):
 *   <dir>/hidet-nccl.<key>.<seq>.join.<r>          member r's JOIN (r: its rank before the round)
 *   <dir>/hidet-nccl.<key>.<seq>.decision          the round's one HEAL decision, in the job's numbering
 *   <dir>/hidet-nccl.<key>.<seq>.join.<r>.leftout  member r read that it was left out
 *   <dir>/hidet-nccl.<key>.<seq0>.request.<j>.<id> a joiner's REQUEST for job rank j
 * 1. Every member puts its join, as in a recovery round (file_joins.c); every joiner puts its
 *    request (once: it stands for the rounds to come until one answers it).
 * 2. The decider, the lowest member that joined and lives, decides as soon as every member
 *    still alive joined and every job rank that is not such a member has a request, at the
 *    latest wait_s after its own start: it keeps every member that joined and lives, takes in
 *    for each other job rank the first valid request of a live process (by when it was put),
 *    and refuses, each said at WARN: a request for a job rank whose member joined or lives on
 *    this host (LIVE), every request for a rank but the one taken (SECOND), a request that fails
 *    its checks (CHECKS: not this user's regular file, torn, another job's or world's, another
 *    secret's MAC). A request of a process of this host that is gone is stale: removed. It
 *    puts the decision where none is (link(2)): exactly one exists.
 * 3. Every member reads it as a recovery round's: named with its join's nonce, it goes on
 *    (renumbered to its place among the kept in job order), else it was left out. Every joiner
 *    reads every heal decision that comes (one listing of the directory a poll): one that takes
 *    in its request's nonce for its job rank renumbers it the same way (its presence taken
 *    over); one that refuses its request's id fails it, saying why; any other one came before it
 *    asked, or was decided without it: it waits for the next, until its deadline.
 * 4. What the round leaves goes as a recovery round's (file_sweep.c), also waiting for each
 *    joiner it named to read it. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_HEAL_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_HEAL_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "hidet_nccl/bootstrap.h"

/* The plug-in's joining and heal (hidet_nccl_bootstrap_v4_t): state is the bootstrap's hn_bf_state_t. */
int hidet_nccl__bf_joining(void *state);
hidet_nccl_status_t hidet_nccl__bf_heal(void *state, uint64_t *epoch, double wait_s, double timeout_s,
                                        unsigned char *members, unsigned char *joined, char *msg, size_t msg_bytes);

#endif
