/* What the shared-file bootstrap's recovery tests (tests/unit/file_recover_test.c,
 * file_recover_hostile_test.c) play with: ranks as real processes forked from the test, each
 * running a little script of bootstrap calls and writing a line per call; the lines read back;
 * the recovery round's file names, and decisions made by hand, to put in a rank's way. */
#ifndef HIDET_NCCL_TESTS_FILE_RANKS_H_
#define HIDET_NCCL_TESTS_FILE_RANKS_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Makes the folder every case's directory and every rank's output go in: <$TEST_TMPDIR or
 * /tmp>/<name>.XXXXXX. 0, or -1. */
int hn_fr_begin(const char *name);
/* A new directory for a case: <base>/case<N>. */
void hn_fr_new_dir(char *out, size_t n);
/* Files in dir whose names contain `part` (listed on stdout when there are any). */
int hn_fr_count_files(const char *dir, const char *part);
/* Seconds of the monotonic clock. */
double hn_fr_now(void);

/* One rank: a child process running `steps`, space-separated:
 *   a<S>    allgather (its rank, 4 bytes), deadline S seconds (none: 30 s); checks every rank's part
 *   r<S>    hidet_nccl_bootstrap_recover with a deadline of S seconds (the decider waits S/2)
 *   w       waits for a byte from the test on its pipe (hn_fr_go)
 *   s<MS>   sleeps MS ms
 *   n<MS>   asks hidet_nccl_bootstrap_news every 5 ms until it says a round began, at most MS ms
 *   k       kills itself (SIGKILL)
 *   h<S>    hidet_nccl_bootstrap_heal with a deadline of S seconds (the decider waits S/2)
 * then destroys the bootstrap. Once the bootstrap is made: "joining <0|1>" (what
 * hidet_nccl_bootstrap_joining says). Each call writes one line to <base>/out.<label>.<rank>:
 *   allgather <status> <seconds> <message>
 *   news <status> <recovering> <seconds>
 *   recover <status> <seconds> <n_kept> <rank> <size> <local rank> <local size> <kept flags> <message>
 *   heal <status> <seconds> <n_members> <n_joined> <rank> <size> <member flags> <joined flags> <end (monotonic s)> <message>
 *   destroy <status> <message>
 * stderr (the library's warnings) goes to <base>/out.<label>.<rank>.err. */
typedef struct {
    pid_t pid;
    int go; /* the test's end of the rank's pipe */
} hn_fr_rank_t;

/* Starts rank `rank` of n of job `key` (label: its output files; secret: the job's, or NULL)
 * in dir, running steps. */
hn_fr_rank_t hn_fr_start(const char *dir, const char *key, const char *label, const char *secret, int rank, int n,
                         const char *steps);
/* The ranks started from now on run as uid/gid (set in the child once its output files are
 * open; 0: as the test). Only root can; -1 (said on stdout) otherwise. */
int hn_fr_run_as(uid_t uid, gid_t gid);
/* Lets the rank go on past a `w`. */
void hn_fr_go(hn_fr_rank_t *r);
/* Waits (at most 60 s, then kills) for the rank to end. */
void hn_fr_finish(hn_fr_rank_t *r);
/* Kills the rank and reaps it at once (a process of this host that is gone). */
void hn_fr_kill(hn_fr_rank_t *r);

/* Line `nth` (from 0) of the rank's output that starts with `what` ("" if none). */
void hn_fr_line_of(const char *label, int rank, const char *what, int nth, char *out, size_t n);
/* A recover line's fields. */
typedef struct {
    int st, n_kept, rank, size, local_rank, local_size;
    double took;
    char kept[80], msg[4096];
} hn_fr_recovered_t;
/* The rank's recover line `nth` into *r: 1, or 0 (said on stdout) when there is none. */
int hn_fr_recovered(const char *label, int rank, int nth, hn_fr_recovered_t *r);
/* A heal line's fields (flags in the job's numbering, one character per job rank). */
typedef struct {
    int st, n_members, n_joined, rank, size;
    double took, at; /* at: hn_fr_now() at its end */
    char members[80], joined[80], msg[4096];
} hn_fr_healed_t;
/* The rank's heal line `nth` into *h: 1, or 0 (said on stdout) when there is none. */
int hn_fr_healed(const char *label, int rank, int nth, hn_fr_healed_t *h);
/* What the rank's bootstrap said of joining: 0, 1, or -1 (no line: its init failed, or not yet). */
int hn_fr_joining(const char *label, int rank);
/* The status of the rank's allgather line `nth` (-1: none), its seconds and (msg not NULL) its
 * message. */
int hn_fr_allgathered(const char *label, int rank, int nth, double *took, char *msg, size_t n);
/* The rank's stderr. */
void hn_fr_err_of(const char *label, int rank, char *out, size_t n);
/* 1 once path exists (within wait_s). */
int hn_fr_wait_for(const char *path, double wait_s);

/* The name of a recovery file of generation 0: join.<rank> (rank >= 0) or the decision. */
void hn_fr_recovery_path(const char *dir, const char *key, uint64_t epoch, int rank, char *out, size_t n);
/* Puts data at path (what was there removed first); a failure fails the test. */
void hn_fr_put_file(const char *path, const uint8_t *data, size_t len);
/* A decision of generation 0, round `epoch` (named as round name_epoch's), over world ranks
 * (at most 16), keeping those with kept[r] == '1', as decider `decider`; with secret (NULL: none)
 * its MAC. Its length (0: too large for cap). */
size_t hn_fr_make_decision(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint64_t name_epoch,
                           uint32_t world, uint32_t decider, const char *kept, const char *secret);
/* The same, every rank r's process written as pids[r] on host (hn_fr_make_decision: pid 1 on
 * "elsewhere"). */
size_t hn_fr_make_decision_of(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint64_t name_epoch,
                              uint32_t world, uint32_t decider, const char *kept, const char *secret,
                              const uint32_t *pids, const char *host);
/* A join of rank `rank` of world to round epoch (generation 0; epoch 0: a rank's presence),
 * written by pid on host, with secret's MAC (NULL: none). Its length. */
size_t hn_fr_make_join(uint8_t *out, size_t cap, const char *key, uint64_t epoch, uint32_t world, uint32_t rank,
                       uint32_t pid, const char *host, const char *secret);
/* The id of a process of this host that is gone (a child that exited, reaped). */
uint32_t hn_fr_dead_pid(void);

#endif
