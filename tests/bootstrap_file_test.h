/* bootstrap_file_test, one binary in four files: the shared-file bootstrap on the CPU, with real
 * ncclGetUniqueId bytes in many processes (fork/exec of file_bootstrap_peer).
 *   bootstrap_file_test.c      main, the table, properties 1 .. 8 of issue 15's list (many
 *                              ranks, stale and corrupt files, two jobs, rounds, roots and readers
 *                              that never come, a crashed root) and the parameters
 *   bootstrap_file_collide.c   jobs that meet where they should not: same-key jobs, answers that
 *                              collide, readers that give up or restart, leftovers of the dead
 *   bootstrap_file_places.c    where the files live: unsafe files and directories and every
 *                              directory above, a slow file system, a taken hello path, Slurm's key
 *   bootstrap_file_jobs.c      what they share (below) */
#ifndef HIDET_NCCL_TESTS_BOOTSTRAP_FILE_TEST_H_
#define HIDET_NCCL_TESTS_BOOTSTRAP_FILE_TEST_H_

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "bootstrap_file/file_format_int.h"
#include "hidet_nccl/bootstrap.h"
#include "tests/cunit_runner.h"

/* ---------------------------------------------------------------- bootstrap_file_jobs.c */

extern char g_peer[PATH_MAX]; /* file_bootstrap_peer */
extern char g_base[PATH_MAX]; /* this run's directory: every case's directory and every rank's output */
extern int g_case;
/* What spawn_as gives the next processes it starts: a slow file system (ms per operation on
 * the rendezvous directory, 0: none), and stderr kept in out.<label>.<rank>.err. */
extern int g_slow_ms, g_keep_stderr;
extern char g_last[8192]; /* the message of read_once's last call */
/* The writer fake_hello_rank names in its hellos: by default pid 1 of another host (a writer
 * whose death nobody here can see). */
extern uint32_t g_fake_pid;
extern const char *g_fake_host;

/* The deadline of a job of n ranks that must meet (their broadcasts' timeout_s): spawning them is
 * most of the work, so 0.5 s a rank on a core, 60 s at least, scaled: hn_test_deadline(0.5, n, 60)
 * (tests/deadline.h; 256 ranks on 2 cores: 64 s, 192 s under ASan). */
double job_deadline(int n);
/* A fresh private directory for one case. */
void new_dir(char *out, size_t n);
/* Rank `rank` of a job with key `key`, its output in out.<label>.<rank>. */
pid_t spawn_as(const char *dir, const char *key, const char *label, int rank, int n, int rounds, double timeout,
               int delay_ms);
pid_t spawn(const char *dir, const char *key, int rank, int n, int rounds, double timeout, int delay_ms);
/* Starts n ranks of job `key` (the root after root_delay_ms) and waits; returns the number of
 * ranks that failed. */
int run_job(const char *dir, const char *key, int n, int rounds, double timeout, int root_delay_ms);
/* Waits for pid; 1 if it exited with status 0. */
int exited_ok(pid_t pid);
/* The pid of a process that is gone: a child that exited and was reaped. */
pid_t dead_pid(void);
void this_host(char host[HN_BF_HOST_BYTES + 1]);

/* The hex id rank got in round, from its output file ("" if none). */
void id_of(const char *key, int rank, int round, char hex[2 * 128 + 1]);
/* 1 if ranks 0 .. n-1 of key got one real id in round (rank 0's, in first). */
int all_same_id(const char *key, int n, int round, char first[2 * 128 + 1]);
/* Files in dir whose names contain `part`. */
int count_files(const char *dir, const char *part);
/* 1 once path exists, 0 if it did not within wait_s (scaled: tests/deadline.h). */
int wait_for(const char *path, double wait_s);
/* 1 if the file at path parses (into *m, pointing into buf). */
int read_msg(const char *path, uint8_t *buf, size_t cap, hidet_nccl__bf_msg_t *m);
/* The stderr a process started with g_keep_stderr left ("" if none). */
void err_of(const char *label, int rank, char *out, size_t n);

/* A valid claim of round 0 of job `key` (world 2, root 0) held for hold_ms more (< 0: expired). */
size_t claim_file(uint8_t *out, size_t cap, const char *key, uint32_t world, long hold_ms);
/* Puts a claim on round 0 of `key` (root 0), held hold_ms more, of process pid on host. */
void put_claim(const char *dir, const char *key, uint32_t world, long hold_ms, uint32_t pid, uint32_t flags,
               const char *host);
/* Writes data at path (replacing what is there) and gives it mode. */
void put_file(const char *path, const uint8_t *data, size_t len, mode_t mode);
/* As rank `rank` of `world`: waits (up to wait_s, scaled) for round 0's claim of `key`, then puts a hello
 * answering it with a nonce of nonce_byte, as written by g_fake_pid of g_fake_host. 0, or -1. */
int fake_hello_rank(const char *dir, const char *key, int nonce_byte, int rank, int world, double wait_s);
int fake_hello(const char *dir, const char *key, int nonce_byte, double wait_s); /* as rank 1 of 2 */

/* A reader (rank 1 of 2, in this process) with a short deadline; g_last keeps the message. */
hidet_nccl_status_t read_once(const char *dir, const char *key, double timeout, double *elapsed);

/* A root (rank 0 of nranks, 2 unless set) broadcasting in a thread (root_thread), while the test
 * plays its readers by hand. */
typedef struct {
    const char *dir, *key;
    double timeout;
    hidet_nccl_status_t st;
    char msg[4096];
    double took;
    int nranks;
} root_job_t;
void *root_thread(void *arg);

/* ---------------------------------------------------------------- the cases of the other files */

/* bootstrap_file_collide.c */
void test_reader_gave_up(void);
void test_two_answers_collide(void);
void test_same_key_jobs(void);
void test_same_key_jobs_with_secrets(void);
void test_fresh_bootstrap_each_round(void);
void test_killed_writers_leftovers(void);
void test_stale_gaveup_ignored(void);
void test_two_readers_one_rank(void);
void test_restarted_reader(void);
void test_restarted_after_publish(void);
void test_collided_claim_of_dead_root(void);

/* bootstrap_file_places.c */
void test_unsafe_files_refused(void);
void test_directory_and_ancestors(void);
void test_slow_file_system(void);
void test_hello_path_taken(void);
void test_slurm_key_whole(void);

#endif
