/* Internal: what one shared-file bootstrap keeps. file_bootstrap.c makes it; file_root.c and
 * file_reader.c run its rounds; file_recover.c and file_heal.c renumber it after a recovery or
 * heal round; file_joining.c tells a restarted rank from a forming one; file_peers.c
 * keeps what it knows of every rank's process; file_presence.c puts and watches its rank's
 * presence; file_sweep.c tidies what its recovery rounds left. */
#ifndef HIDET_NCCL_BOOTSTRAP_FILE_FILE_STATE_INT_H_
#define HIDET_NCCL_BOOTSTRAP_FILE_FILE_STATE_INT_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "bootstrap_file/file_format_int.h"
#include "core/base/kit.h"

/* A rank's process as a record of this job last showed it (pid 0: not known yet). */
typedef struct {
    uint32_t pid;
    char host[HN_BF_HOST_BYTES + 1];
} hn_bf_peer_t;

/* A recovery round this process took part in (joined it, or found it decided without itself),
 * kept until its files may go (file_sweep.c): its decision stays while a rank it keeps has not
 * taken it or a rank it does not keep may still come to read it. */
typedef struct {
    uint64_t epoch;                   /* the round */
    int old_size;                     /* the numbering before it */
    int me;                           /* this process's rank in that numbering (-1: a joiner, not in it) */
    int decided;                      /* members hold the round's decision (0: none seen: it failed here) */
    hidet_nccl__bf_member_t *members; /* old_size: the decision's (for a kept rank, its join's nonce and process) */
    hn_bf_peer_t *old;                /* old_size: each rank's process as known then (pid 0: never seen) */
    /* A heal round (heal 1): its decision's members in the job's numbering, and the requests it
     * named (taken in, or refused): each waits for its joiner to read it. */
    int heal, job_size;
    hidet_nccl__bf_member_t *job;     /* job_size: the heal decision's members */
    int n_asked;
    struct hn_bf_asked {
        int rank;                     /* the job rank asked for */
        uint8_t id[HN_BF_REQUEST_ID]; /* the request's id */
    } *asked;
} hn_bf_round_rec_t;

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
    struct stat presence; /* this rank's presence as put (file_presence.c; st_ino 0: none) */
    int presence_fd;      /* the presence, open (-1: none): a link count of 0 says it was removed or replaced */
    int first_rank, first_size; /* the job's numbering: the one the bootstrap was made with (its presence's) */
    int *job_of;          /* nranks: the job rank of each rank of the current numbering */
    int joining;          /* init found the job formed and going on without this rank: its first round is a heal */
    hn_bf_round_rec_t *rounds; /* the recovery rounds whose files may still be in the directory */
    int n_rounds;
} hn_bf_state_t;

#endif
