/* Internal: what one shared-file bootstrap keeps. file_bootstrap.c makes it; file_root.c and
 * file_reader.c run its rounds; file_recover.c renumbers it after a recovery round; file_peers.c
 * keeps what it knows of every rank's process. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_STATE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_STATE_INT_H_

#include <stddef.h>
#include <stdint.h>

#include "bootstrap_file/file_format_int.h"
#include "core/base/kit.h"

/* A rank's process as a record of this job last showed it (pid 0: not known yet). */
typedef struct {
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_peer_t;

/* What the last recovery round left for this process to tidy at finalize (file_sweep.c): the
 * round's decision stays while a rank it did not keep may still come to read it. */
typedef struct {
    uint64_t epoch;         /* the round (0: none) */
    int old_size;           /* the numbering before it */
    unsigned char *kept;    /* old_size flags */
    hn_bf_peer_t *old;      /* old_size: each old rank's process as last known (pid 0: never seen) */
    int left_out;           /* this process was left out of it */
    hn_bf_peer_t first;     /* the new rank 0's process (the one that tidies) */
} hn_bf_last_round_t;

typedef struct {
    char dir[4096];
    char key[HN_BF_KEY_BYTES + 1];
    int rank, nranks, local_rank, local_size;
    long poll_cap_ns;
    uint64_t generation; /* how many bootstraps of this directory and key this process made before */
    char host[HN_BF_HOST_BYTES + 1]; /* this host's name, as the files carry it */
    uint8_t secret[HN_SECRET_MAX];    /* the job's secret (files carry its MAC); secret_len 0: none */
    size_t secret_len;
    uint64_t epoch;      /* recovery rounds done: the next one is epoch + 1 */
    hn_bf_peer_t *peers; /* nranks: each rank's process, from the rounds that ended well, the roster and decisions */
    int roster;          /* rank 0: 1 once it put the roster (or found it can't), else 0 */
    int probe_next;      /* the rank whose join peer_lost looks for first next time */
    hn_bf_last_round_t last;
} hn_bf_state_t;

#endif
