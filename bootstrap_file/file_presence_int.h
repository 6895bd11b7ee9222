/* Internal: each rank's presence in the rendezvous directory, for the life of its bootstrap
 * (docs/bootstrap_file.md, "A rank's presence"): a join of "recovery round 0" at
 *   <dir>/hidet-nccl.<key>.<seq>.join.<rank>      (seq: the bootstrap's first round's)
 * with its writer's pid and host and the job secret's MAC, put when the bootstrap is made and
 * removed at its finalize. What it gives:
 *   - every rank's process from the moment it made its bootstrap, so that a recovery round knows
 *     a rank that died before any round ended (and what it left can go);
 *   - one process per rank: a process made as a rank whose presence is a live process's of this
 *     host fails at once and removes that presence; the first process fails at its next call or
 *     its finalize, which look whether its presence is still the one it put (at finalize its
 *     removal is that look: whichever of the two removes it first decides, never both accepted). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_PRESENCE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_PRESENCE_INT_H_

#include <stddef.h>

#include "bootstrap_file/file_state_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* At init (more than one rank): puts this rank's presence where none is. What may be there
 * instead: a dead process's of this host, this user's torn or foreign-round file, or one of
 * another host (its death cannot be seen here: said at INFO) or of an ended job with another
 * secret whose process is gone: replaced; a live process's of this host (this job's, or another
 * job's with the same key): a second process as this rank: removed, and this one fails; a file
 * this user may not replace: fails, saying what and whose it is. s->presence: as put. */
hidet_nccl_status_t hidet_nccl__bf_presence_put(hn_bf_state_t *s, char *msg, size_t n);

/* A restarted rank just taken in by a heal round: its presence (its job rank's), put where none
 * is or over a stale one (its process before, gone); one of a live process is left as it is and
 * none is put (said at INFO). */
void hidet_nccl__bf_presence_take(hn_bf_state_t *s);

/* SUCCESS while this rank's presence is the one it put (or it put none); else BOOTSTRAP: another
 * process removed or replaced it (a second process as this rank). One fstat of the presence held
 * open (no path lookup). */
hidet_nccl_status_t hidet_nccl__bf_presence_held(const hn_bf_state_t *s, char *msg, size_t n);

/* At finalize: removes this rank's presence if it is still the one it put: SUCCESS; else (gone,
 * or replaced, before its unlink) BOOTSTRAP, as _held says. That unlink is the last look: a second
 * process made as this rank while this one ends and a finalize race for one unlink; the second
 * process's winning fails both, this one's means its bootstrap ended whole before the two met,
 * and the second goes on alone (puts its presence; it meets no root of this round). */
hidet_nccl_status_t hidet_nccl__bf_presence_drop(hn_bf_state_t *s, char *msg, size_t n);

/* In a recovery round: every rank whose process this bootstrap has not seen in a round, from its
 * presence (this job's: the job secret's MAC), so that a rank dead before any round ended is
 * known dead. Not in the rounds before: a rank killed and started again there is that rank
 * coming back, not a death. */
void hidet_nccl__bf_presence_read(hn_bf_state_t *s);

#endif
