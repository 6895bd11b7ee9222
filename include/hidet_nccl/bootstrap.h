/*
 * Bootstraps: how the ranks of a job find each other, and communicators made from one.
 *
 * A bootstrap is a plug-in: a versioned, const struct of function pointers (in the spirit
 * of NCCL's net and tuner plug-ins). The library needs from it the rank, the size, the
 * local rank, a broadcast of bytes from a root and an allgather. Four come with the library:
 * the shared-file, socket and PMIx backends (here, in libhidet_nccl.a) and MPI
 * (hidet_nccl/bootstrap_mpi.h, in libhidet_nccl_mpi.a). Your own can be passed directly (hidet_nccl_bootstrap_create) or
 * named as a shared object (hidet_nccl_bootstrap_load, or HIDET_NCCL_BOOTSTRAP=/path/libmine.so).
 *
 * Versions: this header describes version 4 (hidet_nccl_bootstrap_v4_t, exported as
 * HIDET_NCCL_BOOTSTRAP_SYMBOL_V4): version 3 (version 2 and a recovery round after a rank died)
 * and a heal round that lets a restarted rank join the survivors. Versions 3, 2 and 1 keep
 * working: a shared object is searched for the v4 symbol, then v3, v2, v1; a v3 plug-in is a v4
 * one that cannot heal, a v2 plug-in one that can neither recover nor heal, and a v1 plug-in is
 * adapted (its optional allgather, when absent, is done as one broadcast from each rank in turn).
 */
#ifndef HIDET_NCCL_BOOTSTRAP_H_
#define HIDET_NCCL_BOOTSTRAP_H_

#include <stddef.h>
#include <stdint.h>

#include "hidet_nccl/hidet_nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The newest plug-in API version, the one this header's hidet_nccl_bootstrap_t has. */
#define HIDET_NCCL_BOOTSTRAP_API_VERSION 4
#define HIDET_NCCL_BOOTSTRAP_API_VERSION_V3 3
#define HIDET_NCCL_BOOTSTRAP_API_VERSION_V2 2
#define HIDET_NCCL_BOOTSTRAP_API_VERSION_V1 1

/* The symbols a plug-in shared object exports: const hidet_nccl_bootstrap_v4_t (or _v3_t, _v2_t, _v1_t). */
#define HIDET_NCCL_BOOTSTRAP_SYMBOL_V4 "hidet_nccl_bootstrap_v4"
#define HIDET_NCCL_BOOTSTRAP_SYMBOL_V3 "hidet_nccl_bootstrap_v3"
#define HIDET_NCCL_BOOTSTRAP_SYMBOL_V2 "hidet_nccl_bootstrap_v2"
#define HIDET_NCCL_BOOTSTRAP_SYMBOL_V1 "hidet_nccl_bootstrap_v1"

/*
 * What the library tells a v2 plug-in's init. Read only the fields your header has: a newer
 * library may append more (size says how many bytes it filled).
 */
typedef struct {
    size_t size;      /* sizeof(hidet_nccl_bootstrap_init_args_t) of the library */
    double timeout_s; /* every wait of init gives up after this many seconds; > 0 */
    /* Hints from the launcher's environment (the first launcher of the library's ordered
     * list that sets a rank variable: hidet-nccl-run, torchrun, Open MPI, MVAPICH2, Intel
     * MPI, Slurm, PMI; docs/user_guide.md). -1: not known. A backend that knows better
     * (MPI, PMIx) ignores them. */
    int rank, nranks, local_rank, local_size;
    /* Where the hints came from, for messages: e.g. "Slurm (SLURM_PROCID, SLURM_NTASKS,
     * SLURM_LOCALID, SLURM_NTASKS_PER_NODE)", or which variables were looked for. Never NULL. */
    const char *hint_source;
} hidet_nccl_bootstrap_init_args_t;

/*
 * Version 2 of the plug-in interface. Every member is required.
 * Every function returns a hidet_nccl_status_t; on failure it may describe the problem in
 * the message buffer it is given (msg, msg_bytes; NUL-terminated, may be left empty).
 * The library owns nothing the plug-in allocates: `state` is released by finalize.
 * The library calls a bootstrap from one thread at a time.
 */
typedef struct {
    /* Short name used in messages ("file", "mpi"). Non-empty. */
    const char *name;
    /* HIDET_NCCL_BOOTSTRAP_API_VERSION (2). */
    int api_version;
    /* Creates the backend's state. params: backend-specific, may be NULL (then the backend
     * takes what it needs from args and its environment). args: never NULL, valid during
     * the call only. *state is passed to every other member. */
    hidet_nccl_status_t (*init)(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                char *msg, size_t msg_bytes);
    /* This process's rank in 0 .. *size-1, and the number of ranks. */
    hidet_nccl_status_t (*rank_size)(void *state, int *rank, int *size, char *msg, size_t msg_bytes);
    /* Rank among the ranks on this host and their number; -1 and -1 if the backend cannot
     * tell (the library then uses the environment). */
    hidet_nccl_status_t (*local_rank)(void *state, int *local_rank, int *local_size, char *msg, size_t msg_bytes);
    /* Collective: on return, buf[0 .. bytes) on every rank holds root's bytes. Every rank
     * calls it with the same bytes, root and tag; tag is a sequence number that never
     * repeats within one bootstrap (use it to keep rounds apart). Gives up with
     * HIDET_NCCL_ERROR_TIMEOUT after timeout_s seconds. bytes is at most 65536. */
    hidet_nccl_status_t (*broadcast)(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    /* Collective: recv[r * bytes .. (r+1) * bytes) = send of rank r, for every rank r. Same
     * tag and deadline rules as broadcast; bytes * size is at most 8 MiB. Used to check that
     * no two ranks share a GPU, and by init with several roots. */
    hidet_nccl_status_t (*allgather)(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    /* Releases state (and whatever the backend holds, e.g. a duplicated MPI communicator). */
    hidet_nccl_status_t (*finalize)(void *state, char *msg, size_t msg_bytes);
} hidet_nccl_bootstrap_v2_t;

/*
 * Version 3: version 2's members, in the same order, then a recovery round. recover may be NULL
 * (the bootstrap cannot go on after a rank died: hidet_nccl_bootstrap_recover and
 * hidet_nccl_comm_recover over it fail at once with recover_unsupported, its reason).
 */
typedef struct {
    const char *name;
    int api_version; /* HIDET_NCCL_BOOTSTRAP_API_VERSION (3) */
    hidet_nccl_status_t (*init)(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*rank_size)(void *state, int *rank, int *size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*local_rank)(void *state, int *local_rank, int *local_size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*broadcast)(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*allgather)(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*finalize)(void *state, char *msg, size_t msg_bytes);
    /* Optional (NULL: cannot recover). Collective over the ranks still alive, each calling it
     * after it learned of a failure (its communicator failed, a bootstrap step failed).
     *   epoch:     1 for the first recovery of this bootstrap, then 2, ...: the same on every
     *              survivor (the library counts); keeps rounds apart.
     *   wait_s:    how long one decider (the backend's: a rendezvous service outside the ranks,
     *              or the lowest live rank) waits for ranks that have neither joined the round nor
     *              are known dead (a closed connection, a local process gone); it decides as soon
     *              as every rank has joined or is known dead, at the latest after wait_s.
     *   timeout_s: the whole call's deadline (> wait_s): HIDET_NCCL_ERROR_TIMEOUT after it.
     *   kept:      out, one entry per rank of the numbering before the call: 1 for each rank in
     *              the set the decider named (the ranks that joined before it decided), else 0.
     * Every rank of the set gets the same set and HIDET_NCCL_SUCCESS; from then on rank_size gives
     * its place among them (numbered in the old order) and their number, and broadcast and
     * allgather go among them (their tags restart at epoch << 32). A rank that joins after the
     * decision, or that the decider did not take, gets HIDET_NCCL_ERROR_BOOTSTRAP saying it was
     * left out and which ranks went on; after that only finalize is called. A pending broadcast
     * or allgather on a rank that has not yet seen the failure should end with an error as soon
     * as the backend knows of it. What the dead ranks left (files, connections) goes. */
    hidet_nccl_status_t (*recover)(void *state, uint64_t epoch, double wait_s, double timeout_s, unsigned char *kept,
                                   char *msg, size_t msg_bytes);
    /* Why this bootstrap cannot recover, for the message when recover is NULL (may be NULL). */
    const char *recover_unsupported;
    /* Optional (NULL: never asked). Without blocking and without taking anything a later call
     * needs: 1 (and why in msg) when the backend already knows that a rank of the current
     * numbering died or began a recovery or heal round, else 0. The library asks it, at most every
     * 50 ms, while hidet_nccl_comm_wait waits on a communicator made over this bootstrap, so that
     * a survivor whose NCCL has not seen the death (over NET only the dead rank's neighbours see
     * it at once; over NVLink nobody does) stops waiting and joins the recovery round. */
    int (*peer_lost)(void *state, char *msg, size_t msg_bytes);
} hidet_nccl_bootstrap_v3_t;

/*
 * Version 4: version 3's members, in the same order, then a heal round: a rank that died and was
 * started again (hidet-nccl-run --max-restarts, or by hand) joins the ranks that went on, under
 * its old rank number, and the job is whole again (docs/recovery.md, "Healing"). joining and heal
 * are both NULL (the bootstrap cannot heal: heal_unsupported says why) or both set.
 *
 * Numbering: the job's numbering is the one rank_size gave right after init (job rank, job
 * size); recovery and heal rounds renumber the bootstrap's ranks to places among the members
 * that go on (in job order), and heal's arrays are always in the job's numbering.
 */
typedef struct {
    const char *name;
    int api_version; /* HIDET_NCCL_BOOTSTRAP_API_VERSION (4) */
    hidet_nccl_status_t (*init)(const void *params, const hidet_nccl_bootstrap_init_args_t *args, void **state,
                                char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*rank_size)(void *state, int *rank, int *size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*local_rank)(void *state, int *local_rank, int *local_size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*broadcast)(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*allgather)(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*finalize)(void *state, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*recover)(void *state, uint64_t epoch, double wait_s, double timeout_s, unsigned char *kept,
                                   char *msg, size_t msg_bytes);
    const char *recover_unsupported;
    int (*peer_lost)(void *state, char *msg, size_t msg_bytes);
    /* Optional (NULL with heal). 1 when init found that the job this rank belongs to formed
     * already and goes on without it (its rank died, or was left out, and this process was
     * started again under that rank number): the bootstrap's first and only collective then is
     * a heal round, as a joiner; until it, rank_size gives the job rank and the job size. 0 for
     * a rank of a job that is forming. Asked once, right after init. */
    int (*joining)(void *state);
    /* Optional (NULL with joining). Collective over the bootstrap's current members (each calls it
     * after a failure, or to take in a restarted rank) and the joiners waiting at the rendezvous
     * (each calls it once, right after an init that said joining).
     *   *epoch:    in, on a member: the round's number (the library counts recovery and heal
     *              rounds together: 1, 2, ...). In, on a joiner: 0; out: the round's number, the
     *              one the members passed.
     *   wait_s:    how long the decider waits, from the round's start, for members that have not
     *              joined it and are not known dead, and for joiners for job ranks that are not
     *              members; it decides as soon as every member still alive has joined and every
     *              job rank that is not a member has a joiner, at the latest after wait_s. On a
     *              joiner: unused (the members' wait counts).
     *   timeout_s: the whole call's deadline (on a joiner, from its call: it waits for the next
     *              heal round until then; HIDET_NCCL_ERROR_TIMEOUT names the job and its rank).
     *   members, joined: out, one entry per rank of the job's numbering (job size entries):
     *              members[j] 1 for each job rank that goes on (the members that joined the round,
     *              and the joiners taken in), joined[j] 1 for the joiners taken in.
     * Who is taken in: one joiner per job rank that is not a member, authenticated as any rank of
     * the job is (the job secret where the rendezvous has one). Refused, and logged at the
     * decider: a joiner for a job rank that is a live member, a second joiner for one rank while
     * the first waits or was taken in, a joiner that cannot prove the secret. A joiner that comes
     * after a round was decided waits for the next one.
     * Every member and joiner taken in gets the same members and joined, and
     * HIDET_NCCL_SUCCESS; from then on rank_size gives its place among the members (numbered in
     * job order) and their number, broadcast and allgather go among them (tags restart at
     * epoch << 32). A member left out (as recover's) gets HIDET_NCCL_ERROR_BOOTSTRAP. A round
     * with nobody to take in and nobody lost is a success that changes nothing but the epoch. */
    hidet_nccl_status_t (*heal)(void *state, uint64_t *epoch, double wait_s, double timeout_s, unsigned char *members,
                                unsigned char *joined, char *msg, size_t msg_bytes);
    /* Why this bootstrap cannot heal, for the message when heal is NULL (may be NULL). */
    const char *heal_unsupported;
} hidet_nccl_bootstrap_v4_t;

/* The newest version, what new plug-ins implement. */
typedef hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_t;

/* Version 1, still loaded: init gets no args (no deadline, no hints), allgather optional. */
typedef struct {
    const char *name;
    int api_version; /* HIDET_NCCL_BOOTSTRAP_API_VERSION_V1 (1) */
    hidet_nccl_status_t (*init)(const void *params, void **state, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*rank_size)(void *state, int *rank, int *size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*local_rank)(void *state, int *local_rank, int *local_size, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*broadcast)(void *state, void *buf, size_t bytes, int root, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    /* Optional (NULL if absent). */
    hidet_nccl_status_t (*allgather)(void *state, const void *send, void *recv, size_t bytes, uint64_t tag,
                                     double timeout_s, char *msg, size_t msg_bytes);
    hidet_nccl_status_t (*finalize)(void *state, char *msg, size_t msg_bytes);
} hidet_nccl_bootstrap_v1_t;

/* A bootstrap ready to use: a plug-in and its state. */
typedef struct hidet_nccl_bootstrap *hidet_nccl_bootstrap_h;

/* Checks ops (name, version, every member) and calls ops->init(params, args) with the
 * deadline ($HIDET_NCCL_TIMEOUT) and the launcher's rank hints. ops must outlive the handle.
 * A struct whose api_version is 2 is read as a version 2 one (no recover). */
hidet_nccl_status_t hidet_nccl_bootstrap_create(const hidet_nccl_bootstrap_t *ops, const void *params,
                                                hidet_nccl_bootstrap_h *out);
/* The same for a version 2 plug-in (it cannot recover). */
hidet_nccl_status_t hidet_nccl_bootstrap_create_v2(const hidet_nccl_bootstrap_v2_t *ops, const void *params,
                                                   hidet_nccl_bootstrap_h *out);
/* The same for a version 1 plug-in, adapted to version 2. */
hidet_nccl_status_t hidet_nccl_bootstrap_create_v1(const hidet_nccl_bootstrap_v1_t *ops, const void *params,
                                                   hidet_nccl_bootstrap_h *out);
/* dlopens path, takes its HIDET_NCCL_BOOTSTRAP_SYMBOL_V3 (else its _V2, else its _V1), then as
 * bootstrap_create (or _create_v2, _create_v1). */
hidet_nccl_status_t hidet_nccl_bootstrap_load(const char *path, const void *params, hidet_nccl_bootstrap_h *out);
/* From the environment: HIDET_NCCL_BOOTSTRAP=file, socket or pmix, or a plug-in path; unset:
 * the file backend when a rendezvous directory is set (by hidet-nccl-run, or by the user under
 * Slurm), else the socket backend when $MASTER_ADDR is (hidet-nccl-run --nnodes, torchrun),
 * else the PMIx backend when a PMIx launcher started the process ($PMIX_NAMESPACE). */
hidet_nccl_status_t hidet_nccl_bootstrap_from_env(hidet_nccl_bootstrap_h *out);
/* Finalizes the backend and frees the handle. NULL is a no-op. A communicator made over a
 * bootstrap that can recover keeps it (for hidet_nccl_comm_recover) until the communicator
 * is destroyed: then the last of them finalizes it. */
hidet_nccl_status_t hidet_nccl_bootstrap_destroy(hidet_nccl_bootstrap_h bs);

hidet_nccl_status_t hidet_nccl_bootstrap_name(hidet_nccl_bootstrap_h bs, const char **name);
hidet_nccl_status_t hidet_nccl_bootstrap_rank(hidet_nccl_bootstrap_h bs, int *rank, int *size);
hidet_nccl_status_t hidet_nccl_bootstrap_local_rank(hidet_nccl_bootstrap_h bs, int *local_rank, int *local_size);
/* The backend's broadcast with the next sequence number, against timeout_s seconds (0:
 * $HIDET_NCCL_TIMEOUT's; negative, NaN, infinite or past 1e7: INVALID_ARGUMENT). */
hidet_nccl_status_t hidet_nccl_bootstrap_broadcast(hidet_nccl_bootstrap_h bs, void *buf, size_t bytes, int root,
                                                   double timeout_s);
/* The backend's allgather: recv (bytes * size) gets every rank's bytes in rank order; timeout_s
 * as broadcast's. */
hidet_nccl_status_t hidet_nccl_bootstrap_allgather(hidet_nccl_bootstrap_h bs, const void *send, void *recv,
                                                   size_t bytes, double timeout_s);

/* A recovery round (collective over the ranks still alive; see recover in
 * hidet_nccl_bootstrap_v3_t): one decider names the survivors, the same on every one of them,
 * and from then on the bootstrap's ranks are theirs, renumbered in the old order.
 * timeout_s: the whole call (0: $HIDET_NCCL_TIMEOUT's; negative, NaN, infinite or past 1e7:
 * INVALID_ARGUMENT); the decider waits at most half of it for ranks neither in the round nor
 * known dead. kept (may be NULL): one entry per rank of the numbering before the call, 1 for each
 * rank that goes on; *n_kept (may be NULL): their number. Errors: the bootstrap cannot recover
 * (HIDET_NCCL_ERROR_UNSUPPORTED with its reason: MPI, PMIx, version 1 and 2 plug-ins); a round
 * under way on another thread (HIDET_NCCL_ERROR_INVALID_USAGE); this rank was left out
 * (HIDET_NCCL_ERROR_BOOTSTRAP), the deadline (HIDET_NCCL_ERROR_TIMEOUT) or any other failure of
 * the round: the others may have gone on without this rank, so the handle then takes only
 * destroy (every other call says why). */
hidet_nccl_status_t hidet_nccl_bootstrap_recover(hidet_nccl_bootstrap_h bs, double timeout_s, int *kept, int *n_kept);
/* Without blocking: *recovering = 1 when the bootstrap already knows that a rank began a
 * recovery round (its peer_lost: the socket rendezvous's notice, a join in the rendezvous
 * directory), else 0 (also for a bootstrap that cannot tell). hidet_nccl_comm_wait asks it for a
 * communicator made over the bootstrap; a program that makes its communicators itself asks it
 * while it waits on them, then calls hidet_nccl_bootstrap_recover. */
hidet_nccl_status_t hidet_nccl_bootstrap_news(hidet_nccl_bootstrap_h bs, int *recovering);

/* Without blocking: *joining = 1 when this bootstrap's init found its job formed and going on
 * without this rank (a restarted rank: see joining in hidet_nccl_bootstrap_v4_t), else 0. Its
 * first collective must then be hidet_nccl_bootstrap_heal (hidet_nccl_comm_init does it). */
hidet_nccl_status_t hidet_nccl_bootstrap_joining(hidet_nccl_bootstrap_h bs, int *joining);
/* A heal round (collective over the members still alive and the joiners waiting; see heal in
 * hidet_nccl_bootstrap_v4_t): one decider takes in one restarted process per missing job rank,
 * the same on every member and joiner, and from then on the bootstrap's ranks are theirs,
 * numbered in job order: a joiner has its old rank back when every other rank is a member.
 * timeout_s: the whole call, as for recover (0: $HIDET_NCCL_TIMEOUT's); the decider waits at most
 * half of it for members not in the round and for joiners of missing ranks. members, joined (may
 * be NULL): one entry per rank of the job (the size the bootstrap had when it was made): 1 for
 * each rank that goes on, 1 for each rank taken in as a joiner. *n_members, *n_joined (may be
 * NULL): their numbers. Errors: the bootstrap cannot heal (HIDET_NCCL_ERROR_UNSUPPORTED with its
 * reason: MPI, PMIx, plug-ins before version 4, the socket rendezvous without hidet-nccl-run: the
 * handle is then as it was);
 * a round under way on another thread (INVALID_USAGE); this rank left out, refused as a joiner
 * (BOOTSTRAP, the reason named), the deadline (TIMEOUT): the handle then takes only destroy. */
hidet_nccl_status_t hidet_nccl_bootstrap_heal(hidet_nccl_bootstrap_h bs, double timeout_s, int *members, int *joined,
                                              int *n_members, int *n_joined);

/* ---------------------------------------------------------------- size-versioned structs
 *
 * The parameter structs below start with `size`, set by their _INIT macro to the sizeof the
 * caller was compiled with. A smaller (older) struct is accepted: its fields are used and
 * the newer ones take their defaults. A larger (newer) one is accepted only if every byte
 * past what this library knows is zero; otherwise it is HIDET_NCCL_ERROR_INVALID_ARGUMENT. */

/* ---------------------------------------------------------------- the shared-file backend */

/*
 * Rank 0 publishes the bytes in a file in a directory every rank sees (a local directory
 * or a shared file system such as NFS or Lustre); the others wait for it. Protocol:
 * docs/bootstrap_file.md. Fields left NULL or -1 come from the environment:
 *   dir:         $HIDET_NCCL_RENDEZVOUS_DIR
 *   job_key:     $HIDET_NCCL_JOB_KEY, else "slurm-$SLURM_JOB_ID.$SLURM_STEP_ID"
 *   rank, nranks, local_rank, local_size: the launcher's variables (the bootstrap's rank
 *                hints: $HIDET_NCCL_RANK/$HIDET_NCCL_WORLD_SIZE of hidet-nccl-run,
 *                $RANK/$WORLD_SIZE of torchrun, $SLURM_PROCID/$SLURM_NTASKS of Slurm, ...)
 */
typedef struct {
    size_t size; /* sizeof(hidet_nccl_file_bootstrap_params_t), for growth */
    const char *dir;
    const char *job_key; /* 1 to 64 of [A-Za-z0-9._-]; unique per job */
    int rank;
    int nranks;
    int local_rank;
    int local_size;
} hidet_nccl_file_bootstrap_params_t;

#define HIDET_NCCL_FILE_BOOTSTRAP_PARAMS_INIT \
    { sizeof(hidet_nccl_file_bootstrap_params_t), NULL, NULL, -1, -1, -1, -1 }

/* The file backend as a plug-in struct (name "file"). */
extern const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_file_v4;
#define hidet_nccl_bootstrap_file_v3 hidet_nccl_bootstrap_file_v4 /* its name before version 4 */
#define hidet_nccl_bootstrap_file_v2 hidet_nccl_bootstrap_file_v4 /* its name before version 3 */

/* hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_file_v4, params, out). */
hidet_nccl_status_t hidet_nccl_bootstrap_file(const hidet_nccl_file_bootstrap_params_t *params,
                                              hidet_nccl_bootstrap_h *out);

/* ---------------------------------------------------------------- the PMIx backend */

/*
 * Rank, size and local rank from the PMIx server that started the process (Open MPI's
 * mpirun and prterun, Slurm's srun --mpi=pmix, Flux, PBS), and bytes spread by
 * PMIx_Put/PMIx_Commit, a PMIx_Fence_nb that collects the data (awaited against the deadline)
 * and PMIx_Get. No MPI is needed. libpmix is loaded at run time: $HIDET_NCCL_PMIX_LIBRARY
 * (then nothing else), a copy already in the process, $PMIX_INSTALL_PREFIX/lib,
 * /usr/lib/x86_64-linux-gnu/pmix2/lib, then the system loader (libpmix.so.2, libpmix.so); the
 * error lists every place. hidet_nccl_bootstrap_from_env chooses it when $PMIX_NAMESPACE is
 * set (and neither a rendezvous directory nor $MASTER_ADDR is: a launcher started inside a
 * PMIx job keeps its own rendezvous), or when HIDET_NCCL_BOOTSTRAP=pmix. params: none (NULL). PMIx is initialized by the first PMIx
 * bootstrap and finalized when the process exits (atexit), not when a bootstrap is
 * destroyed: a process that finalizes PMIx leaves its job's collectives for good.
 */
extern const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_pmix_v4;
#define hidet_nccl_bootstrap_pmix_v3 hidet_nccl_bootstrap_pmix_v4 /* its name before version 4 */
#define hidet_nccl_bootstrap_pmix_v2 hidet_nccl_bootstrap_pmix_v4 /* its name before version 3 */

/* hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_pmix_v4, NULL, out). */
hidet_nccl_status_t hidet_nccl_bootstrap_pmix(hidet_nccl_bootstrap_h *out);

/* ---------------------------------------------------------------- the socket backend */

/*
 * Many nodes without MPI, PMIx or a shared file system, as torchrun does it: rank 0 listens on
 * the port, every other rank connects to the address and stays connected for the bootstrap's
 * life. Messages are versioned, length-checked and checksummed and carry the job key; a
 * connection that is not a rank of this job is dropped and logged (HIDET_NCCL_DEBUG=WARN),
 * never trusted, and floods of connections cannot keep a rank out. With a job secret
 * ($HIDET_NCCL_JOB_SECRET_FILE or $HIDET_NCCL_JOB_SECRET, the same on every rank; hidet-nccl-run
 * makes one) a rank is admitted only when it proves it holds it, and rank 0 proves it back;
 * without one, rank 0 warns that whoever knows the key can join. Protocol and what a stranger
 * can do: docs/bootstrap_socket.md. Fields left NULL or -1 come from the environment (another
 * negative rank or size is an error):
 *   master_addr, master_port: $MASTER_ADDR, $MASTER_PORT (hidet-nccl-run --master-addr/--master-port,
 *                torchrun)
 *   job_key:     $HIDET_NCCL_JOB_KEY, else "socket-<port>" (jobs that share an address and port at
 *                once need keys of their own)
 *   rank, nranks, local_rank, local_size: the launcher's variables (the bootstrap's hints)
 * hidet_nccl_bootstrap_from_env chooses it when $MASTER_ADDR is set and no rendezvous
 * directory is, or when HIDET_NCCL_BOOTSTRAP=socket.
 */
typedef struct {
    size_t size; /* sizeof(hidet_nccl_socket_bootstrap_params_t), for growth */
    const char *master_addr;
    int master_port;
    const char *job_key;
    int rank;
    int nranks;
    int local_rank;
    int local_size;
} hidet_nccl_socket_bootstrap_params_t;

#define HIDET_NCCL_SOCKET_BOOTSTRAP_PARAMS_INIT \
    { sizeof(hidet_nccl_socket_bootstrap_params_t), NULL, -1, NULL, -1, -1, -1, -1 }

/* The socket backend as a plug-in struct (name "socket"). */
extern const hidet_nccl_bootstrap_v4_t hidet_nccl_bootstrap_socket_v4;
#define hidet_nccl_bootstrap_socket_v3 hidet_nccl_bootstrap_socket_v4 /* its name before version 4 */
#define hidet_nccl_bootstrap_socket_v2 hidet_nccl_bootstrap_socket_v4 /* its name before version 3 */

/* hidet_nccl_bootstrap_create(&hidet_nccl_bootstrap_socket_v4, params, out). */
hidet_nccl_status_t hidet_nccl_bootstrap_socket(const hidet_nccl_socket_bootstrap_params_t *params,
                                                hidet_nccl_bootstrap_h *out);

/* ---------------------------------------------------------------- communicators from a bootstrap */

#define HIDET_NCCL_DEVICE_AUTO (-1)    /* pick: see hidet_nccl_comm_init */
#define HIDET_NCCL_DEVICE_CURRENT (-2) /* the calling thread's current CUDA device */

#define HIDET_NCCL_UNSET (-2147483647 - 1) /* an NCCL knob left to NCCL (NCCL_CONFIG_UNDEF_INT) */

typedef struct {
    size_t size;      /* sizeof(hidet_nccl_init_options_t), for growth */
    int device;       /* a GPU index, HIDET_NCCL_DEVICE_AUTO or HIDET_NCCL_DEVICE_CURRENT */
    double timeout_s; /* every wait of the init; 0: $HIDET_NCCL_TIMEOUT, else 300 */
    /* NCCL's communicator knobs (ncclConfig_t); HIDET_NCCL_UNSET leaves one to NCCL (and its
     * NCCL_* environment variables). A knob the loaded NCCL lacks is refused with the version
     * it needs. Added with the library's memory; older callers' smaller structs leave them
     * unset. */
    int cta_policy;         /* NCCL_CTA_POLICY_DEFAULT 0, _EFFICIENCY 1 (2.27), _ZERO 2 (2.28) */
    int min_ctas, max_ctas; /* CTAs per collective, 1..64 (2.17) */
    const char *comm_name;  /* shown in NCCL's logs and profilers (2.24); copied by NCCL */
    int traffic_class;      /* network traffic class, >= 0 (2.24) */
    int split_share;        /* 1: communicators split from this one share its resources (2.18) */
} hidet_nccl_init_options_t;

#define HIDET_NCCL_INIT_OPTIONS_INIT                                                                              \
    { sizeof(hidet_nccl_init_options_t), HIDET_NCCL_DEVICE_AUTO, 0.0, HIDET_NCCL_UNSET, HIDET_NCCL_UNSET,            \
      HIDET_NCCL_UNSET, NULL, HIDET_NCCL_UNSET, HIDET_NCCL_UNSET }

/*
 * Collective over the bootstrap's ranks: a new owned communicator with a fresh id.
 * 0. A bootstrap that says joining (a restarted rank: hidet_nccl_bootstrap_joining) first waits
 *    for the members' heal round (hidet_nccl_comm_heal on their side) and is taken in, then goes
 *    on as they do; hidet_nccl_comm_joined then says which ranks are new.
 * 1. Picks the GPU before any other CUDA call: options->device if >= 0; else the local rank
 *    from the launchers' variables in the library's order ($HIDET_NCCL_LOCAL_RANK,
 *    $LOCAL_RANK, $OMPI_COMM_WORLD_LOCAL_RANK, $MV2_COMM_WORLD_LOCAL_RANK, $MPI_LOCALRANKID,
 *    $SLURM_LOCALID, $PMI_LOCAL_RANK), then the bootstrap's; modulo the visible devices.
 *    Two ranks on one GPU of one host are an error (found by the bootstrap's allgather).
 * 2. Rank 0 calls ncclGetUniqueId; the bootstrap broadcasts it (and rank 0's failure, if any).
 *    With more ranks than $HIDET_NCCL_RANKS_PER_ROOT (default 128) and NCCL 2.23 or newer,
 *    ceil(n / that) ranks spread evenly are roots, each makes an id, the bootstrap's allgather
 *    brings them to every rank, and init is ncclCommInitRankScalable.
 * 3. The communicator is created as hidet_nccl_comm_init_rank makes it (blocking, on a
 *    helper thread awaited until the deadline); at the deadline HIDET_NCCL_ERROR_TIMEOUT
 *    names what was awaited.
 * options may be NULL (defaults).
 */
hidet_nccl_status_t hidet_nccl_comm_init(hidet_nccl_bootstrap_h bs, const hidet_nccl_init_options_t *options,
                                         int *comm_id);

/*
 * Survivors of a dead rank go on (docs/recovery.md). Collective over the ranks still alive of
 * a communicator made over a bootstrap (hidet_nccl_comm_init, hidet_nccl_init, or an earlier
 * recovery), each calling it after the communicator failed on it (hidet_nccl_comm_wait or
 * comm_check returned an NCCL error or a timeout, or NCCL reports one now):
 * 1. the bootstrap's recovery round: its one decider (the launcher's socket rendezvous, or the
 *    lowest live rank in the rendezvous directory) names the survivors, the same on each;
 * 2. the survivors shrink the old communicator (ncclCommShrink with NCCL_SHRINK_ABORT, NCCL
 *    2.27) when every one of them finds NCCL without an error of its own on it (a transport that
 *    saw the peer die makes NCCL refuse), else they rebuild: a fresh id over the bootstrap, and a
 *    new communicator on the old one's GPU with its knobs (HIDET_NCCL_RECOVER_REBUILD=1: always).
 * *new_id: the survivors' communicator, ranks numbered in the old order; it keeps the old one's
 * error policy and its flight recorder names the old one's key ("from", "how": "recover").
 * *n_lost (may be NULL): ranks left behind. The old id stays failed (collectives refused): destroy
 * it; its registrations of library memory stay with it (the memory itself is fine): register
 * the buffers again on *new_id. timeout_s: the whole call (0: $HIDET_NCCL_TIMEOUT's; negative,
 * NaN, infinite: INVALID_ARGUMENT); the decider waits at most half of it for a rank that is alive
 * but has not joined, which is then left out (and told so when it comes): give it more than your
 * comm_wait deadline, so survivors still waiting for the dead rank join in time.
 * Errors, nothing done: INVALID_USAGE for a communicator that has not failed, one recovered
 * already (the message names into which id), one under recovery on another thread, a borrowed
 * one, one made by init_rank, init_all, split or shrink (recover the one it came from), a call
 * inside a group; UNSUPPORTED when its bootstrap cannot recover (MPI, PMIx, plug-ins before
 * version 3: the reason is in the message). Errors of the round (this rank left out, the
 * deadline) or of the shrink/rebuild leave the old id failed and the bootstrap out of use.
 */
hidet_nccl_status_t hidet_nccl_comm_recover(int comm_id, double timeout_s, int *new_id, int *n_lost);

/*
 * Heal: the job is whole again (docs/recovery.md, "Healing"). Collective over the members still
 * alive of a communicator made over a bootstrap (hidet_nccl_comm_init, hidet_nccl_init, or an
 * earlier recover or heal) and the ranks restarted under the numbers of ranks that died
 * (hidet-nccl-run --max-restarts N starts them; their hidet_nccl_init, or hidet_nccl_comm_init over
 * a bootstrap that says joining, is their side of the call). Call it where you would call
 * hidet_nccl_comm_recover (the communicator failed), or on a healthy communicator that recovery
 * left smaller, to take the restarted ranks back in:
 * 1. the bootstrap's heal round: its one decider drops the members that died, and takes in one
 *    restarted process per missing job rank (the rules in hidet_nccl_bootstrap_heal), the same on
 *    every member and joiner;
 * 2. the new communicator: when nobody was taken in, as hidet_nccl_comm_recover (shrink where
 *    every member can, else rebuild), or the same id when nobody was lost either and it is
 *    healthy; when someone was, rebuilt from a fresh id over the bootstrap, every member on its
 *    old GPU with the old knobs. Which path ran is said at INFO and in the flight recorder
 *    ("how": "heal-rebuild" or "heal-shrink").
 * The ranks of *new_id are numbered in job order, so when every rank of the job is back each has
 * its job rank: the application's decomposition is unchanged. What the newcomers need to catch up
 * (their state) is the application's: hidet_nccl_comm_joined says which ranks are new.
 * *new_id: the whole-again communicator (comm_id itself when nothing changed); the old id stays
 * failed (destroy it), as after recover. *n_joined (may be NULL): the ranks taken in.
 * timeout_s: the whole call (0: $HIDET_NCCL_TIMEOUT's); the decider waits at most half of it for
 * the restarted ranks to ask: give it more than the restart takes (--restart-delay, the process
 * start). Errors, nothing done: as hidet_nccl_comm_recover's (a borrowed communicator, one made
 * by init_rank, split or shrink, one healed or recovered already, inside a group, a round on
 * another thread); UNSUPPORTED when its bootstrap cannot heal (the reason in the message).
 */
hidet_nccl_status_t hidet_nccl_comm_heal(int comm_id, double timeout_s, int *new_id, int *n_joined);

/* Which ranks of comm_id are new: for a communicator made by hidet_nccl_comm_heal, or by the
 * init of a restarted rank (joining), joined[r] = 1 for each rank r taken in by that heal round,
 * else 0 (every other communicator: all 0). joined (may be NULL): comm_id's size entries;
 * *n_joined (may be NULL): how many. The same answer on every rank of comm_id. */
hidet_nccl_status_t hidet_nccl_comm_joined(int comm_id, int *joined, int *n_joined);

/* The zero-argument start: hidet_nccl_bootstrap_from_env, hidet_nccl_comm_init with the
 * defaults, bootstrap released. The same binary works under hidet-nccl-run and under Slurm
 * (with HIDET_NCCL_RENDEZVOUS_DIR on a shared file system). MPI programs: hidet_nccl_mpi_init. */
hidet_nccl_status_t hidet_nccl_init(int *comm_id);

#ifdef __cplusplus
}
#endif

#endif /* HIDET_NCCL_BOOTSTRAP_H_ */
