/* hidet-nccl-run in parts, each a file whose opening comment says what it owns. Lowest first:
 * each uses only the parts before it (no circle: tests/layers checks it); a lower part learns
 * of a higher one only through a hook it is given (g.at_die).
 *   run_common.c         the launcher's one state (g), its clock, its fatal exit, a rank's
 *                        number in the job (every part uses it)
 *   run_env.c            the ranks' environment: the variables the launcher sets for them, -x,
 *                        a fresh job key and secret
 *   run_rendezvous_dir.c the job's key (given, fresh or the backend's), and its rendezvous
 *                        directory (one node's private one: made, removed at exit)
 *   run_serve.c          the socket rendezvous node 0's launcher serves for the whole job
 *   run_signals.c        the signals the launcher takes, read through a signalfd
 *   run_output.c         the ranks' output: tagged lines, long lines held, per-rank logs
 *   run_watchdog.c       the watchdog: what the launcher leaves when it is killed is cleaned up
 *   run_children.c       the ranks as processes: started (and again, as the same rank), reaped,
 *                        signalled, their leftovers swept; what an exit means for the job is the
 *                        caller's
 *   run_dumps.c          --trace-dir and --trace-on-failure: flight recorder dump requests
 *   run_restart.c        --max-restarts: a rank that dies is started again (the same rank, after
 *                        --restart-delay and once its earlier process group is empty), at most N
 *                        times; the restart said, called off when the job stops
 *   run_stop.c           the job's course: a failure or a signal stops it (SIGTERM, grace,
 *                        SIGKILL), the main loop's deadlines, the exit code
 *   run_options.c        the command line and usage
 *   hidet_nccl_run.c     main and the main loop
 * Functions shared between the parts start with run_; the rest are static. */
#ifndef HIDET_NCCL_TOOLS_RUN_H_
#define HIDET_NCCL_TOOLS_RUN_H_

#include <limits.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <time.h>

#include "hidet_nccl/rendezvous.h"

/* One output stream of a rank: the pipe it writes into, the line being assembled, and where
 * its lines go (our stdout or stderr, unless the rank has a log file). */
typedef struct {
    int fd; /* -1: none, or closed */
    int dest;
    char partial[4096];
    size_t len;
    int mid_line;      /* the start of the current line (and its tag) is out, its end is not */
    double line_until; /* mid_line: the hold ends then, at the latest */
    double piece_until; /* mid_line: ... or then, when no further piece has come */
} stream_t;

typedef struct {
    pid_t pid;       /* also its process group's id */
    stream_t out[2]; /* stdout, stderr */
    int log_fd;      /* --output-dir file, or -1 */
    stream_t *log_holder; /* the stream whose long line is half written into log_fd, or NULL */
    int done;
    int status;
    double group_kill_at; /* after the rank exited: SIGKILL for what is left of its group then; 0: done */
    int restarts;         /* how often it was started again: its HIDET_NCCL_RESTART_COUNT */
    double restart_at;    /* a restart is pending: due then (its earlier group gone); 0: none */
    double restart_cap;   /* the group got SIGKILL for the restart: started anyway then; 0: not yet */
} rank_t;

/* The launcher's one state: its options, the job's meeting place, its ranks, its watchdog. */
typedef struct {
    int n;
    int tag_output;
    const char *output_dir;
    const char *timeout;
    const char *rendezvous_parent;
    double grace_s;
    int keep_going;
    int max_restarts;        /* --max-restarts: how often one rank may be started again (0: never) */
    double restart_delay_s;  /* --restart-delay: from a rank's death to its restart */
    const char *trace_dir;   /* --trace-dir: HIDET_NCCL_TRACE_DIR for the ranks */
    int trace_on_failure;    /* --trace-on-failure: SIGUSR1 to the others, time to dump */
    double trace_wait_s;
    int nnodes, node_rank;  /* several launchers, one per node */
    const char *master_addr; /* the socket rendezvous at node 0's host */
    int master_port;         /* 0 with --rendezvous socket on one node: the system's choice */
    const char *rendezvous_kind; /* --rendezvous: "file" or "socket"; NULL: file on one node, else as given */
    int serve;               /* this launcher serves the socket rendezvous (node 0) */
    double timeout_s;        /* --timeout's seconds; 0: none given */
    hidet_nccl_rendezvous_h rv; /* the served rendezvous, while the job runs */
    struct rlimit nofile;    /* the open-files limit before the rendezvous raised it: the ranks' */
    int nofile_saved;
    const char *job_key;     /* --job-key */
    const char *secret_file; /* --job-secret-file: HIDET_NCCL_JOB_SECRET_FILE for the ranks */
    char **child_argv;       /* PROGRAM ARGS..., for every start of a rank */
    char **env_x;            /* -x VAR=VALUE and -x VAR, as given (the words of argv) */
    int n_env_x;
    char secret[65];         /* one node: a fresh random secret (HIDET_NCCL_JOB_SECRET), hex */
    int shared_dir;          /* --rendezvous-dir with --job-key (--nnodes: always): that directory, as it is */
    char rendezvous[PATH_MAX];
    int parent_fd, dir_fd; /* the private rendezvous directory's parent, and the directory itself */
    int output_fd;         /* --output-dir */
    char key[64];
    rank_t *ranks;
    stream_t *holder[2];   /* the stream whose long line is half written to our stdout, stderr */
    int out_is_err;        /* our stdout and stderr are one file (2>&1): one destination */
    int watch_fd;          /* the launcher's end of the watchdog's socket, or -1 */
    pid_t watch_pid;       /* the watchdog, or 0 */
    void (*at_die)(void);  /* run_die's last words, once ranks may run (run_children.c's sweep), or NULL */
} run_state_t;

extern run_state_t g;

/* What the main loop tracks. */
typedef struct {
    int first_rank, first_code, running, forwarded;
    double trace_until;    /* --trace-on-failure: the others dump until then, then get SIGTERM; 0: none */
    struct timespec failed_at; /* when the first rank failed: a dump newer than this is in */
    double stop_deadline;  /* SIGKILL for what is left then; < 0: none */
    double drain_deadline; /* once every rank has exited: stop reading their pipes then */
} job_t;

/* run_common.c */
void run_die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
double run_now(void);
int run_global_rank(int i);

/* run_env.c */
void run_add_env_x(char *arg);
const char *run_rank_env(const char *name);
int run_given(const char *name);
void run_make_secret(void);
void run_fresh_key(void);
void run_rank_environment(int rank, int restarts);

/* run_rendezvous_dir.c */
void run_make_rendezvous(void);
int run_remove_rendezvous_once(void);
void run_remove_rendezvous(void);

/* run_serve.c */
void run_serve_rendezvous(void);
void run_serve_the_others(int sfd);

/* run_signals.c */
int run_signal_fd(void);
void run_ignore_stopping(void);

/* run_output.c */
int run_held_from(rank_t *r, const stream_t *s);
void run_pump(rank_t *r, int i, stream_t *s);
void run_end_stalled_lines(void);
double run_hold_ends(const stream_t *h);
int run_pipes_open(void);
void run_flush_all(void);
int run_out_is_err(void);
int run_open_log(int i, char *why, size_t why_bytes);
void run_end_streams(int i);

/* run_watchdog.c */
void run_start_watchdog(int sfd);
void run_watch_tell(int rank, pid_t pgid);
void run_watch_lost(const char *why);
void run_watch_done(void);

/* run_children.c */
void run_spawn(int i);
void run_respawn(int i);
int run_group_left(int i);
void run_signal_all(int sig);
void run_reap(job_t *job, void (*exited)(job_t *job, int i));
void run_kill_overdue_groups(double t);
void run_sweep_children(void);
void run_die_sweep(void);

/* run_dumps.c */
void run_set_trace_dir(void);
void run_ask_for_dumps(job_t *job, int failed);
void run_end_dump_wait(job_t *job);

/* run_restart.c */
int run_restart_take(int i);
int run_restart_call_off(int i, const char *why);
void run_restart_due(void);
double run_restart_next(void);

/* run_stop.c */
void run_forward_signals(int sfd, job_t *job);
void run_rank_exited(job_t *job, int i);
void run_kill_overdue(job_t *job);
int run_next_wait_ms(const job_t *job);
int run_report(const job_t *job);

/* run_options.c */
int run_parse_args(int argc, char **argv);

#endif /* HIDET_NCCL_TOOLS_RUN_H_ */
