/* Internal: the names of the shared-file bootstrap's files (docs/bootstrap_file.md), all
 * "<dir>/hidet-nccl.<key>.<seq>.<what>", and the sequence numbers in them. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_NAMES_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_NAMES_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_state_int.h"

/* The most recovery rounds one bootstrap can have: the epoch takes 16 bits of a sequence number. */
#define HN_BF_MAX_EPOCH 0xffffu

/* A round's sequence number: the bootstrap's generation (modulo 2^16) in bits 32..47, the tag's
 * epoch (tag >> 32, the recovery rounds before it) in bits 48..63, the tag's count in 0..31. */
uint64_t hidet_nccl__bf_seq(const hn_bf_state_t *s, uint64_t tag);
/* The generation and epoch of a sequence number. */
uint64_t hidet_nccl__bf_seq_generation(uint64_t seq);
uint64_t hidet_nccl__bf_seq_epoch(uint64_t seq);
/* A recovery round's sequence number: that of the first round of its epoch (the files differ
 * in what follows it). Epoch 0: the roster's. */
uint64_t hidet_nccl__bf_recovery_seq(const hn_bf_state_t *s, uint64_t epoch);

/* A round's files: hello_rank >= 0 a reader's hello, -1 the announce, -2 the claim. */
void hidet_nccl__bf_round_path(const hn_bf_state_t *s, uint64_t seq, int hello_rank, char *out, size_t n);
/* A recovery round's files: rank >= 0 that rank's join, -1 the decision. mark: "" or a suffix
 * (HN_BF_MARK_LEFTOUT). */
void hidet_nccl__bf_recovery_path(const hn_bf_state_t *s, uint64_t epoch, int rank, const char *mark, char *out,
                                  size_t n);

/* A restarted rank's request to be taken back in, for job rank `rank`, named by its id (the first
 * HN_BF_REQUEST_ID bytes of its nonce, in hex): <dir>/hidet-nccl.<key>.<seq>.request.<rank>.<id>,
 * seq: the bootstrap's first round's (a request outlives heal rounds until it is taken). */
void hidet_nccl__bf_request_path(const hn_bf_state_t *s, int rank, const uint8_t *id, char *out, size_t n);
/* The id in a request's name (its entry in the directory, as hidet_nccl__bf_name_kind read it). 0, or -1. */
int hidet_nccl__bf_request_name_id(const char *key, const char *name, uint8_t id[HN_BF_REQUEST_ID]);

/* What a rank left out of a recovery round leaves in place of its join once it read the
 * decision: it knows, so the decision need not wait for it any more. */
#define HN_BF_MARK_LEFTOUT ".leftout"

/* What a directory entry of this bootstrap's key is. */
enum {
    HN_BF_NAME_OTHER = 0, /* not one of the forms below (another key's, whose name begins like ours) */
    HN_BF_NAME_ROUND,     /* root, id, hello.<r>, or a reader's mark hello.<r>.gaveup / .failed */
    HN_BF_NAME_JOIN,      /* join.<r> */
    HN_BF_NAME_LEFTOUT,   /* join.<r>.leftout */
    HN_BF_NAME_DECISION,  /* decision (a recovery round's, the roster, or a heal round's) */
    HN_BF_NAME_REQUEST    /* request.<r>.<id>: a restarted rank's */
};
/* Reads name (an entry of the directory): the kind, *seq, *rank (hello's, join's; else -1) and
 * *tmp (1: a temporary file of that name: ".tmp.<host>.<pid>.<random>" follows). */
int hidet_nccl__bf_name_kind(const char *key, const char *name, uint64_t *seq, int *rank, int *tmp);

#endif
