/* Internal: removing what a shared-file bootstrap's recovery rounds, dead ranks and ended jobs
 * left, so that a finished job leaves nothing in the directory (docs/bootstrap_file.md, "What is
 * removed, and when"). A recovery round's files (its decision, the joins, the marks of ranks out
 * of it) go once nobody needs them: every rank it keeps has taken it (its join is gone) and
 * every other rank knows it is out (its .leftout mark, this job's, by its own process) or is a
 * process of this host that is gone; whoever of the round's ranks finds that, at its finalize
 * (or the new rank 0 of a later round), removes them. Each rank makes its own part durable (its
 * join gone, its mark put) before it looks at the others', so the last one always sees it. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_SWEEP_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_SWEEP_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_state_int.h"

/* Notes a recovery round this process took part in, for the tidying: decision: the round's, as
 * read (NULL: none seen, the round failed here); old: each rank's process as known (old_size
 * ranks, the numbering before the round); me: this process's rank there. */
void hidet_nccl__bf_round_note(hn_bf_state_t *s, uint64_t epoch, int old_size, int me,
                               const hidet_nccl__bf_msg_t *decision, const hn_bf_peer_t *old);

/* Notes a heal round this process took part in (a member, me its rank before the round; or a
 * joiner taken in, me -1): decision: the heal decision as read (NULL: none seen, the round failed
 * here); old: each rank's process as known (old_size ranks, the members before the round). Its
 * files wait for every member it keeps, every member before it left out (its mark, or its process
 * gone), and every joiner it named (taken in or refused: its request gone, or its process). */
void hidet_nccl__bf_round_note_heal(hn_bf_state_t *s, uint64_t epoch, int old_size, int me,
                                    const hidet_nccl__bf_msg_t *decision, const hn_bf_peer_t *old);

/* The new rank 0 once it took the decision of recovery or heal round `epoch` (every rank that goes
 * on has left the rounds before it). Of this key and generation: what the rounds of earlier
 * epochs left (claims, announces, hellos and their marks: the rounds a death broke off), the
 * roster, .leftout marks of earlier rounds whose decision went; up to this round, joins
 * (presences among them), requests and temporary files of processes of this host that are gone.
 * The decision of an earlier recovery or heal round this process did not note is noted from the
 * decision itself (those that noted it may have died: heal replaces them), never removed here: a
 * rank it left out, or kept, that was stopped while the others went on must find it when it
 * comes (else it would decide that round anew, alone). Then the earlier rounds noted whose files
 * nobody needs any more. One listing of the directory. */
void hidet_nccl__bf_sweep(hn_bf_state_t *s, uint64_t epoch);

/* At finalize: rank 0's roster; a recovery round of the next epoch decided without this rank
 * (it marks itself out of it, then tidies it as the others); every recovery or heal round noted,
 * whose files go if nobody needs them any more (said at INFO when they stay). A joiner never
 * taken in: only the heal rounds that refused it. */
void hidet_nccl__bf_tidy(hn_bf_state_t *s);

/* When a bootstrap is made (rank 0, and local rank 0): what ended jobs with this key left, of any
 * generation, judged by processes of this host that are gone: temporary files (writers killed
 * mid-write), joins of recovery rounds and marks (their writers), decisions (every process they
 * keep). Said at WARN, naming them. Not presences, claims, hellos or announces: the rounds
 * judge those as they meet them (a presence of a rank of this job that died already tells a
 * recovery round it is dead). One listing of the directory. */
void hidet_nccl__bf_sweep_ended(const hn_bf_state_t *s);

/* "0, 2, 5" of the n flags set (at most 16 shown, then ", ... (N ranks)"; "none" when none);
 * with_count: always followed by " (N ranks)", for messages. */
void hidet_nccl__bf_list_ranks(const unsigned char *flag, int n, int with_count, char *out, size_t cap);

#endif
