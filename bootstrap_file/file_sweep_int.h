/* Internal: removing what a shared-file bootstrap's earlier rounds and dead ranks left, so that
 * a finished job leaves nothing in the directory (docs/bootstrap_file.md, "Recovery round"). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_SWEEP_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_SWEEP_INT_H_

#include <stdint.h>

#include "bootstrap_file/file_state_int.h"

/* The new rank 0 once it took the decision of recovery round `epoch` over `world` (> 0) ranks
 * (the numbering before it; every rank that goes on has left the rounds before it): every file
 * of this key and generation of an earlier epoch
 * (rounds, their marks, joins, decisions, the roster, temporary files: what dead ranks left
 * among them), and of this round the joins and temporary files of processes of this host that
 * are gone. One listing of the directory. */
void hidet_nccl__bf_sweep(const hn_bf_state_t *s, uint64_t epoch, uint32_t world);
/* Once the decision of recovery round `epoch` is no longer needed: every file of that round
 * (joins, marks, the decision, temporary files; valid or not) and every file of earlier epochs. */
void hidet_nccl__bf_sweep_round(const hn_bf_state_t *s, uint64_t epoch);

/* At finalize: the roster (rank 0, no recovery round), or what the last recovery round left
 * (its decision, the marks of ranks it left out, the joins of dead ranks), by its new rank 0
 * (or by a rank it left out, once that one's process is gone). The decision stays, said at INFO,
 * while a rank that goes on has not taken it or a rank left out may still come (its process
 * alive, or of another host, and no mark of its own saying it read it). */
void hidet_nccl__bf_tidy(hn_bf_state_t *s);

/* "0, 2, 5" of the n flags set (at most 16 shown, then ", ... (N ranks)"; "none" when none);
 * with_count: always followed by " (N ranks)", for messages. */
void hidet_nccl__bf_list_ranks(const unsigned char *flag, int n, int with_count, char *out, size_t cap);

#endif
