/* Internal: the shared-file bootstrap's recovery round (docs/bootstrap_file.md, "Recovery round").
 * Round E's files, beside the bootstrap's rounds, numbered as the first round of epoch E:
 *   <dir>/hidet-nccl.<key>.<seq>.join.<r>          survivor r's JOIN (r: its rank before the round)
 *   <dir>/hidet-nccl.<key>.<seq>.decision          the round's one DECISION
 *   <dir>/hidet-nccl.<key>.<seq>.join.<r>.leftout  rank r read that it was left out
 * 1. Every survivor puts its join (a fresh nonce, its pid and host, the epoch; the job secret's
 *    MAC) where none is (link(2)); a join there of a dead process of this host, or a file that is
 *    no join of this round, is replaced; a live process's join as this rank fails the round.
 * 2. A joined rank decides when every lower rank is known dead (a process of this host that is
 *    gone, by its join or by what this bootstrap saw of it) or has not joined within wait_s, and
 *    every higher rank has joined or is known dead (or wait_s passed); a lower rank that joined and
 *    lives decides instead (if it dies first, the next takes over). The decider keeps every rank
 *    that joined and lives, itself first among them, and puts the decision where none is
 *    (link(2)): exactly one decision exists; a decider whose put loses takes the winner's.
 * 3. Every joiner waits for the decision (against the call's deadline) and takes it only if it
 *    names this rank with this very join's nonce: then the bootstrap is renumbered (its place among
 *    the ranks kept, their number) and it removes its join; else it was left out: its join becomes
 *    its .leftout mark and the call fails saying which ranks went on. A decision place that holds
 *    anything else (refused, or another job's MAC) fails the round at once, naming it.
 * 4. The new rank 0 removes what earlier epochs left (rounds the dead broke off, their hellos and
 *    temporary files, the previous decision or roster) and the joins of dead processes. The
 *    decision stays (the next round's roster, and the answer for a rank left out that comes late)
 *    until the next round, or until finalize finds every rank it named has taken it and every rank
 *    it left out knows (its mark) or is gone (file_sweep.c). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_RECOVER_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_RECOVER_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "hidet_nccl/bootstrap.h"

/* The plug-in's recover (hidet_nccl_bootstrap_v3_t): state is the bootstrap's hn_bf_state_t. */
hidet_nccl_status_t hidet_nccl__bf_recover(void *state, uint64_t epoch, double wait_s, double timeout_s,
                                           unsigned char *kept, char *msg, size_t msg_bytes);

#endif
