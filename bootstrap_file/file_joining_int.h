/* Internal: whether a shared-file bootstrap being made is a restarted rank of a job that formed
 * and goes on without it (a joiner: its first round is a heal round), or a rank of a job that is
 * forming (docs/bootstrap_file.md, "Healing"). A joiner is told by what the job left in the
 * directory, under this bootstrap's key and generation, of this job (the job secret's MAC):
 *   - a decision of a recovery or heal round, or rank 0's roster, that keeps a process that
 *     lives (or of another host): the first round ended well (the roster), or the job went on
 *     past a death (a decision);
 *   - the first round's announce, answering a live claim, without this rank's hello: this rank's
 *     process before took the bytes and died (the roster comes once every rank took them; rank 0
 *     puts it before the announce goes, so that one of the two is always there); or, with a job
 *     secret, the announce of this rank's own dead process as the root.
 * A rank of a job that is forming sees none of these: the first round cannot end, and its
 * announce cannot be put, without this rank's hello. A rank killed in the first round and
 * started again before its root published is still that rank coming back (it takes its dead
 * answer over). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_JOINING_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_JOINING_INT_H_

#include <stddef.h>

#include "bootstrap_file/file_state_int.h"

/* 1 (why: what showed it) when the job formed and goes on without this process, else 0. */
int hidet_nccl__bf_job_formed(const hn_bf_state_t *s, char *why, size_t why_bytes);

#endif
