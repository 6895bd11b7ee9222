/* Internal: one round of the shared-file bootstrap, and what its root (file_root.c) and its
 * readers (file_reader.c) share: the round, a reader's hello as read, the marks of a reader that
 * ended without the bytes, whether an awaited peer is still there.
 * Protocol (docs/bootstrap_file.md), for each round (a broadcast from a root, or an allgather
 * through rank 0), its files named by job key and sequence number (the bootstrap's generation
 * in this process for that directory and key, and the round's tag: file_names.c):
 *   1. the root claims the round: <dir>/hidet-nccl.<key>.<seq>.root with a fresh random nonce,
 *      put only where no live claim is (file_claim.c; two live roots: both jobs fail);
 *   2. every reader answers the claim with a HELLO (a fresh nonce of its own, the claim's
 *      nonce, its pid and host and, for an allgather, its part) at
 *      <dir>/hidet-nccl.<key>.<seq>.hello.<rank>, put only where no hello answers the claim
 *      already (one of a dead process of this host is stale: replaced; a live one: a collision);
 *   3. the root waits for every HELLO that answers its claim, then publishes the ANNOUNCE (the
 *      bytes every rank gets, and every nonce) at <dir>/hidet-nccl.<key>.<seq>.id;
 *   4. a reader accepts only an ANNOUNCE of its job, round and world that carries the claim's
 *      nonce and its own (so a stale or foreign file is never accepted), then removes its
 *      HELLO; one that ends without the bytes renames it to its mark instead: <hello>.gaveup
 *      (its deadline passed) or <hello>.failed (it saw a collision);
 *   5. the root removes the ANNOUNCE and its claim once every HELLO is gone, and what writers
 *      of the round left (temporary files of a killed writer of this host, marks). A HELLO
 *      that went with its reader's mark fails the round on the root; two live answers for one
 *      rank are a collision; a collided claim is removed by its root after a short linger.
 * One deadline covers the whole call, on every rank: no step starts past it. A wait on a peer
 * that left (its process, known from an earlier round, gone from this host; or it joined a
 * recovery round: file_peers.c) fails at once. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_ROUND_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_ROUND_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_format_int.h"
#include "bootstrap_file/file_state_int.h"
#include "hidet_nccl/hidet_nccl.h"

/* One round. A broadcast: part_bytes 0, every rank ends with root's out (out_bytes). An
 * allgather: every rank's part (part_bytes) lands at out + rank * part_bytes on every rank. */
typedef struct {
    uint64_t seq;
    int root;
    const void *part;
    size_t part_bytes;
    void *out;
    size_t out_bytes;
} hn_bf_round_t;

/* What a reader leaves in place of its hello (renamed, so that the root never sees it gone)
 * when it ends without the bytes: the root counts a rank whose hello went as one that took
 * them, unless one of these, answering the root's claim with that reader's nonce, is there. */
#define HN_BF_MARK_GAVEUP ".gaveup" /* its deadline passed */
#define HN_BF_MARK_FAILED ".failed" /* it failed otherwise: it saw the claim collided */

/* What a hello says besides its part: the reader's nonce and who wrote it. */
typedef struct {
    uint8_t nonce[HN_BF_NONCE];
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_hello_t;

/* 1 if the hello's writer is a process of this host that is gone (the hello is stale). */
int hidet_nccl__bf_writer_gone(const hn_bf_hello_t *h);

/* Reads and checks the hello of rank r at path (its place, or a mark's): 1 it answers the
 * claim whose nonce is root_nonce (its part copied into part, unless NULL), 2 it answers
 * another claim (a stale one: nothing copied), 0 absent, -1 refused (why), 3 a hello whose MAC
 * is not this job's secret's (a second job's reader, or a rank without the secret): never
 * taken, an answer of another job. *h for 1 and 2. */
int hidet_nccl__bf_read_hello_at(const hn_bf_state_t *s, const hn_bf_round_t *rd, const char *path, int r,
                                 const uint8_t *root_nonce, hn_bf_hello_t *h, void *part, char *why, size_t wn);
/* The same, at rank r's hello's place. */
int hidet_nccl__bf_read_hello(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r, const uint8_t *root_nonce,
                              hn_bf_hello_t *h, void *part, char *why, size_t wn);

/* The round fails at once when rank r, awaited, has left it (file_peers.c: its process, known
 * from an earlier round, is gone; or it joined a recovery round); role: "root", "reader". */
hidet_nccl_status_t hidet_nccl__bf_still_there(const hn_bf_state_t *s, const hn_bf_round_t *rd, int r,
                                               const char *role, char *msg, size_t msg_bytes);

#endif
