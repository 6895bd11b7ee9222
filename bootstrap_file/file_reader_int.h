/* Internal: a reader's side of a shared-file bootstrap's round (file_round_int.h). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_READER_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_READER_INT_H_

#include <stddef.h>

#include "bootstrap_file/file_round_int.h"
#include "bootstrap_file/file_state_int.h"
#include "core/base/kit.h"

/* A reader: waits for the root's claim, answers it with a hello, takes the announce that
 * carries both nonces. A new claim (a stale one replaced) is answered again. Ending without
 * the bytes, it renames its hello to its mark (.gaveup at the deadline, .failed otherwise), so
 * that the root knows it did not take them. poll: begun when the call began (its deadline
 * bounds the whole call). */
hidet_nccl_status_t hidet_nccl__bf_reader_round(hn_bf_state_t *s, const hn_bf_round_t *rd, hn_poll_t *poll, char *msg,
                                                size_t msg_bytes);

#endif
