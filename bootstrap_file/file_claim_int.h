/* Internal: the root's claim on a round of the shared-file bootstrap (docs/bootstrap_file.md).
 * The root of a round puts a CLAIM file with a fresh random nonce where none is (or where a
 * stale one is: expired, or of a dead process on this host); readers answer that nonce in
 * their hellos and accept only an announce that carries it. A second live root of the same job
 * key and round (two jobs sharing a key) finds the claim taken, marks it collided and fails;
 * the first root and every reader see the mark and fail too: a collision is an error, never a
 * wrong peer. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_CLAIM_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_CLAIM_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootstrap_file/file_format_int.h"

/* Which round, and what this process knows of its claim. */
typedef struct {
    const char *key;
    uint64_t seq;
    uint32_t world, root;
    char path[4352];
    uint8_t nonce[HN_BF_NONCE]; /* the claim's nonce (valid when have) */
    int have;
    struct stat seen; /* the claim file as last put or read: a change shows at the next look */
} hn_bf_claim_t;

/* Return values beside 0 and -1 (why set): the round's claim is marked collided, or was
 * replaced or removed under its root. */
#define HN_BF_COLLIDED (-2)

/* The root: puts a claim held for hold_s seconds. 0, -1 (cannot write: why), or HN_BF_COLLIDED
 * (a live claim of another process is there: it is marked, and why names its holder). */
int hidet_nccl__bf_claim_take(hn_bf_claim_t *c, double hold_s, char *why, size_t why_bytes);

/* The root, while the round runs: 0 if its claim is as it was put, else HN_BF_COLLIDED. */
int hidet_nccl__bf_claim_held(hn_bf_claim_t *c, char *why, size_t why_bytes);

/* A reader: looks at the claim when it changed. 1 a new live claim (c->nonce), 0 nothing new
 * (none yet, an expired one, or the same), -1 a file refused (why), HN_BF_COLLIDED. */
int hidet_nccl__bf_claim_look(hn_bf_claim_t *c, char *why, size_t why_bytes);

/* Anyone who sees two processes in one round: marks the claim collided (kept otherwise). */
void hidet_nccl__bf_claim_mark(const hn_bf_claim_t *c);

/* The root at the end of its round: removes its claim if it is still the one it put. */
void hidet_nccl__bf_claim_drop(hn_bf_claim_t *c);

#endif
