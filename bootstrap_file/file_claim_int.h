/* Internal: the root's claim on a round of the shared-file bootstrap (docs/bootstrap_file.md).
 * The root of a round puts a CLAIM file with a fresh random nonce where none is (or where a
 * stale one is: expired, or of a dead process on this host); readers answer that nonce in
 * their hellos and accept only an announce that carries it. A second live root of the same job
 * key and round (two jobs sharing a key) finds the claim taken, marks it collided and fails;
 * the first root and every reader see the mark and fail too: a collision is an error, never a
 * wrong peer. The mark lasts while its root lives: the root removes it once every answer to
 * it is withdrawn, and a collided claim of a dead root is stale like any other. */
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
    uint32_t pid;     /* a reader's: the root's process, as the claim it answers says */
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_claim_t;

/* Return values beside 0 and -1 (why set): the round's claim is marked collided, or was
 * replaced or removed under its root. */
#define HN_BF_COLLIDED (-2)

/* The root: puts a claim held for hold_s seconds. 0, -1 (cannot write: why), or HN_BF_COLLIDED
 * (a live claim of another process is there: it is marked, and why names its holder). */
int hidet_nccl__bf_claim_take(hn_bf_claim_t *c, double hold_s, char *why, size_t why_bytes);

/* The root, while the round runs: 0 if its claim is as it was put, else HN_BF_COLLIDED. */
int hidet_nccl__bf_claim_held(hn_bf_claim_t *c, char *why, size_t why_bytes);

/* A reader: looks at the claim when it changed. 1 a new live claim (c->nonce, c->pid, c->host), 0 nothing new
 * (none yet, the same, or a stale one: expired or of a dead process of this host, collided or
 * not; why then says so, else why is ""), -1 a file refused (why), HN_BF_COLLIDED (a claim
 * marked collided whose root lives, or the very claim this reader answered). */
int hidet_nccl__bf_claim_look(hn_bf_claim_t *c, char *why, size_t why_bytes);

/* Anyone who sees two processes in one round: marks the claim collided (kept otherwise), in the
 * file as it is (written in place: a claim removed meanwhile is never brought back). */
void hidet_nccl__bf_claim_mark(const hn_bf_claim_t *c);

/* The root at the end of its round: removes its claim if it is still the one it put. */
void hidet_nccl__bf_claim_drop(hn_bf_claim_t *c);

/* 1 if the claim file is still this root's (its nonce), marked collided and not expired. */
int hidet_nccl__bf_claim_collided_ours(const hn_bf_claim_t *c);

/* The root whose claim was marked collided, once nobody needs the mark any more (every answer
 * to it withdrawn): removes it if it still carries this root's nonce and has not expired (a
 * claim nobody can replace yet, so the file removed is that one). 1 removed, else 0. */
int hidet_nccl__bf_claim_remove_collided(hn_bf_claim_t *c);

#endif
