/* Internal: the root's side of a shared-file bootstrap's round (file_round_int.h). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_ROOT_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_ROOT_INT_H_

#include <stddef.h>

#include "bootstrap_file/file_round_int.h"
#include "bootstrap_file/file_state_int.h"
#include "core/base/kit.h"

/* The root: claims the round, waits for every reader's hello that answers its claim, publishes
 * the announce (for an allgather, assembled from the readers' parts), waits until every hello
 * is gone (taken), then removes the announce, its claim (a collided one after a short linger)
 * and what writers of the round left. Ended well, it notes every reader's process for the
 * rounds to come and puts the roster (file_peers.c: once per bootstrap). poll: begun when the
 * call began (its deadline bounds the whole call). */
hidet_nccl_status_t hidet_nccl__bf_root_round(hn_bf_state_t *s, const hn_bf_round_t *rd, hn_poll_t *poll, char *msg,
                                              size_t msg_bytes);

#endif
