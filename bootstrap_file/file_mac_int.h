/* Internal: the job secret's MAC on the shared-file bootstrap's files (hellos, announces, joins,
 * decisions; claims carry none). */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_MAC_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_MAC_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_state_int.h"

/* With the job's secret: writes the MAC into a file of len bytes encoded with room for it, and
 * its checksum again. 0, or -1 and why. Without a secret: nothing, 0. */
int hidet_nccl__bf_seal(const hn_bf_state_t *s, uint8_t *file, size_t len, char *why, size_t why_bytes);

/* 0 if a parsed file's MAC is right under the job's secret (or neither side has one); else -1
 * and why. `writer` names who wrote it in the message: "its root", "its reader". */
int hidet_nccl__bf_mac_ok(const hn_bf_state_t *s, const uint8_t *data, const hidet_nccl__bf_msg_t *m,
                          const char *writer, char *why, size_t why_bytes);

#endif
