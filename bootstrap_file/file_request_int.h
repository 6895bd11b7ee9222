/* Internal: a restarted rank's request to be taken back in by a heal round of the shared-file
 * bootstrap (docs/bootstrap_file.md, "Healing"):
 *   <dir>/hidet-nccl.<key>.<seq>.request.<rank>.<id>
 * (rank: its job rank; seq: the bootstrap's first round's; id: the first 8 bytes of its nonce, in
 * hex, so that two processes asking for one rank each have their own), a record of kind request
 * (its fresh nonce, when it was put, its pid and host; the job secret's MAC), put where none is
 * (O_CREAT|O_EXCL|O_NOFOLLOW, 0600, link(2)), read as every file is (O_NOFOLLOW, fstat: this
 * user's regular file, not group/other writable, the right size). It stays while its joiner
 * waits: heal rounds take it in or refuse it; the joiner removes it when it read the answer, when
 * its deadline passes and at its end; one of a process of this host that is gone is stale. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_REQUEST_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_REQUEST_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_state_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* What a request says. */
typedef struct {
    uint8_t nonce[HN_BF_NONCE];
    uint64_t asked_ms;
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_request_t;

/* The joiner: puts its request for its job rank (s->first_rank) with nonce, *path (its place) and
 * *mine (the file as put). */
hidet_nccl_status_t hidet_nccl__bf_request_put(const hn_bf_state_t *s, const uint8_t nonce[HN_BF_NONCE], char *path,
                                               size_t path_bytes, struct stat *mine, char *msg, size_t n);

/* The request at path, for job rank `rank`, named by id: 1 a request of this job (key, the
 * bootstrap's first round, the job's size, this rank, a nonce whose id is the name's, the MAC)
 * (*q), 0 none, -1 refused (why: torn, corrupt, another round's, rank's or world's, not this
 * user's file...), 3 its MAC is not this job's secret's (*q says who wrote it). */
int hidet_nccl__bf_request_read(const hn_bf_state_t *s, const char *path, int rank, const uint8_t id[HN_BF_REQUEST_ID],
                                hn_bf_request_t *q, char *why, size_t why_bytes);

/* Removes the request at path if it is still the one put (*mine). */
void hidet_nccl__bf_request_withdraw(const char *path, const struct stat *mine);

/* "1 (live member)": a refusal's reason in words. */
const char *hidet_nccl__bf_refusal_reason(int reason);

#endif
