/* hidet-nccl-run: starts N local ranks of a program, as mpirun does for one node, and supervises
 * them; one launcher per node (--nnodes, --node-rank) makes a job of many nodes, node K's ranks
 * being K*N .. K*N+N-1; what the launcher shows or names of a rank (its output's tag, its log
 * file, its messages) is its rank in the job, never its index on the node. Each rank gets its
 * rank, local rank and sizes (HIDET_NCCL_* and torchrun's RANK, LOCAL_RANK, WORLD_SIZE,
 * LOCAL_WORLD_SIZE), the variables given with -x, and where to meet, which picks the bootstrap
 * hidet_nccl_init uses:
 *   - one node: a fresh job key and a private rendezvous directory (0700, removed on every
 *     exit) for the shared-file bootstrap;
 *   - --master-addr/--master-port (or --rendezvous socket on one node): MASTER_ADDR and
 *     MASTER_PORT for the socket rendezvous, which the launcher of node 0 serves itself for the
 *     job's whole life (include/hidet_nccl/rendezvous.h, a thread of this process), so that it
 *     outlives any rank; its ranks and the other nodes' learn so from
 *     HIDET_NCCL_RENDEZVOUS_SERVED=1 and are all its clients, rank 0 included;
 *   - --rendezvous-dir with --nnodes and --job-key: a directory every node sees, as it is.
 * Supervision: output tagged [rank] (one tag per line, however long) or into per-rank logs,
 * signals forwarded, the first failing rank stops the others (SIGTERM, grace, SIGKILL to each
 * rank's process group; SIGUSR1 first for flight recorder dumps with --trace-on-failure), its
 * exit code is the launcher's. Nothing the ranks start outlives the launcher:
 *   - the ranks die with it (PR_SET_PDEATHSIG);
 *   - it is their children's subreaper (PR_SET_CHILD_SUBREAPER), so what a rank leaves behind,
 *     even in a session of its own, becomes the launcher's child and is killed at its exit;
 *   - a watchdog (a child in a process group of its own) kills every rank's process group and
 *     removes the private rendezvous directory when the launcher dies without saying it is done,
 *     as under SIGKILL, which runs none of the launcher's code.
 * The habits of the launchers users know are taken: mpirun's -np N and -x VAR[=VALUE],
 * torchrun's --nproc-per-node N (--nproc_per_node). See usage(). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base/number.h"
#include "hidet_nccl/hidet_nccl.h"
#include "hidet_nccl/rendezvous.h"

#define MAX_RANKS 4096

/* A line longer than a stream's buffer goes out in pieces as it comes, the tag before the first
 * only. While such a line is half out, its destination is held: the other streams that write
 * there are not read, so no other line lands inside it. A hold ends with the line, or when its
 * pieces stop coming for k_piece_gap_s or it has lasted k_line_hold_s (a progress bar that never
 * ends its line, or a rank that waits for the held ones): the line is ended there and its rest
 * starts a tagged line of its own, so a hold never makes the ranks wait for each other. */
static const double k_piece_gap_s = 0.5, k_line_hold_s = 5;

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
} rank_t;

static struct {
    int n;
    int tag_output;
    const char *output_dir;
    const char *timeout;
    const char *rendezvous_parent;
    double grace_s;
    int keep_going;
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
} g;

static void usage(FILE *f) {
    fprintf(f,
            "usage: hidet-nccl-run [options] [-n N] [-x VAR[=VALUE]]... PROGRAM [ARGS...]\n"
            "Starts N ranks of PROGRAM on this machine for hidet_nccl_init, like mpirun for one node.\n"
            "On many nodes, run one launcher per node with --nnodes and --node-rank, and either\n"
            "--master-addr/--master-port (the socket rendezvous, served by node 0's launcher) or a\n"
            "--rendezvous-dir every node sees with a --job-key (the shared-file bootstrap). Options\n"
            "end at PROGRAM or at '--'.\n"
            "\n"
            "  -n, --np N             number of ranks on this node (default: the visible GPUs, from\n"
            "                         CUDA_VISIBLE_DEVICES, a -x of it included, or /dev/nvidia*);\n"
            "                         also -np N or -npN (mpirun), --nproc-per-node N and\n"
            "                         --nproc_per_node N (torchrun)\n"
            "  -x VAR=VALUE           set VAR to VALUE for the ranks (mpirun's -x; repeatable)\n"
            "  -x VAR                 pass VAR on from this environment; an error when it is unset\n"
            "                         (the ranks get the launcher's whole environment anyway).\n"
            "                         VAR is a letter or _, then letters, digits and _; the\n"
            "                         variables hidet-nccl-run sets itself (those named below,\n"
            "                         HIDET_NCCL_TIMEOUT, HIDET_NCCL_TRACE_DIR) are refused\n"
            "      --tag-output       prefix every output line with [rank] (once per line, however\n"
            "                         long); the rank is the rank in the job (K*n + i on node K)\n"
            "      --output-dir DIR   write each rank's output to DIR/rank.<rank>.log (the rank in\n"
            "                         the job: nodes may share DIR)\n"
            "      --timeout S        bootstrap and init deadline in seconds (HIDET_NCCL_TIMEOUT)\n"
            "      --rendezvous-dir D make the job's private rendezvous directory inside D\n"
            "                         (default $TMPDIR or /tmp); it is removed on every exit.\n"
            "                         With --job-key K: D itself, as it is (the ranks meet there\n"
            "                         under K and remove their files; D stays)\n"
            "      --grace S          seconds between SIGTERM and SIGKILL when stopping ranks (5)\n"
            "      --nnodes N         number of nodes, each with its own hidet-nccl-run (1)\n"
            "      --node-rank K      this node's index, 0 .. N-1 (0); its ranks are K*n .. K*n+n-1\n"
            "      --master-addr HOST node 0's host: the ranks meet through the socket rendezvous,\n"
            "                         which node 0's hidet-nccl-run serves (it outlives any rank)\n"
            "      --master-port P    the port node 0's hidet-nccl-run listens on (with --master-addr)\n"
            "      --rendezvous KIND  file (one node's default: a private directory) or socket (the\n"
            "                         socket rendezvous, served by this launcher on one node too;\n"
            "                         its port: --master-port, else one the system picks; what\n"
            "                         --master-addr implies). With socket, the ranks can recover\n"
            "                         from a dead rank, rank 0 included (hidet_nccl_comm_recover)\n"
            "      --job-key KEY      the job's key, the same on every node (the socket rendezvous\n"
            "                         takes socket-<port> without it; a shared directory needs it)\n"
            "      --job-secret-file F the job's secret, the same file content on every node (16 ..\n"
            "                         4096 bytes, yours, mode 600): HIDET_NCCL_JOB_SECRET_FILE; the\n"
            "                         ranks of the socket rendezvous prove they hold it. One node\n"
            "                         makes a fresh secret itself; across nodes without one (or\n"
            "                         $HIDET_NCCL_JOB_SECRET[_FILE]) the rendezvous is unauthenticated\n"
            "      --trace-dir DIR    the ranks' flight recorders dump into DIR (made if missing):\n"
            "                         HIDET_NCCL_TRACE_DIR; read the dumps with hidet-nccl-trace DIR\n"
            "      --trace-on-failure when a rank fails, send the others SIGUSR1 (a flight recorder\n"
            "                         dump) and give them up to --trace-wait S (10) to write it before\n"
            "                         stopping them; the trace directory is --trace-dir, else\n"
            "                         $HIDET_NCCL_TRACE_DIR, else ./hidet-nccl-trace\n"
            "      --keep-going       when a rank fails, leave the others running (they see the\n"
            "                         failure through their own timeouts); the exit code is\n"
            "                         still that of the first rank that failed\n"
            "  -h, --help             this text\n"
            "  -V, --version          the version\n"
            "\n"
            "Each rank gets HIDET_NCCL_RANK, HIDET_NCCL_LOCAL_RANK, HIDET_NCCL_WORLD_SIZE,\n"
            "HIDET_NCCL_LOCAL_WORLD_SIZE (and RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),\n"
            "HIDET_NCCL_JOB_KEY and HIDET_NCCL_RENDEZVOUS_DIR, or MASTER_ADDR, MASTER_PORT and\n"
            "HIDET_NCCL_RENDEZVOUS_SERVED=1, and the\n"
            "job's secret (HIDET_NCCL_JOB_SECRET, fresh and random, on one node; HIDET_NCCL_JOB_SECRET_FILE\n"
            "with --job-secret-file); a secret already in the environment is passed on as it is.\n"
            "Tags, log names and messages name a rank by its rank in the job. When a rank fails, the\n"
            "others get SIGTERM, then SIGKILL after the grace period, and hidet-nccl-run exits with\n"
            "that rank's code (128+signal if it was killed). SIGINT, SIGTERM, SIGHUP, SIGQUIT and\n"
            "SIGALRM are forwarded to every rank and stop the job (a second one kills at once); SIGUSR1\n"
            "and SIGUSR2 are forwarded; a closed output (| head) stops the ranks with SIGTERM. Each\n"
            "rank runs in its own process group: what a rank leaves running gets SIGTERM when it exits\n"
            "and SIGKILL after the grace period; what left the group (setsid) is killed when\n"
            "hidet-nccl-run exits. If hidet-nccl-run is killed (SIGKILL), the ranks die with it and a\n"
            "watchdog kills their process groups and removes the rendezvous directory.\n");
}

static void sweep_children(void);
static void watch_tell(int rank, pid_t pgid);
static void watch_done(void);

/* Once ranks run, what they started goes too (their groups are killed by the caller). */
static void die(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));
static void die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hidet-nccl-run: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (g.watch_pid > 0) {
        sweep_children();
        watch_done();
    }
    exit(code);
}

/* Rank i of this launcher is rank global_rank(i) of the job: what its tag, its log file and
 * every message name (across nodes the index i repeats on every node). */
static int global_rank(int i) { return g.node_rank * g.n + i; }

static const char *rank_env(const char *name);

static int visible_gpus(void) {
    const char *v = rank_env("CUDA_VISIBLE_DEVICES");
    if (v != NULL) {
        int n = 0, in_item = 0;
        for (const char *p = v; *p; p++) {
            if (*p == ',') in_item = 0;
            else if (*p != ' ' && !in_item) { in_item = 1; n++; }
        }
        if (n > MAX_RANKS)
            die(2, "CUDA_VISIBLE_DEVICES lists %d devices, more than the %d ranks one launcher starts: give -n", n,
                MAX_RANKS);
        return n;
    }
    DIR *d = opendir("/dev");
    if (d == NULL) return 0;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        const char *s = e->d_name;
        if (strncmp(s, "nvidia", 6) == 0 && s[6] >= '0' && s[6] <= '9' && strspn(s + 6, "0123456789") == strlen(s + 6))
            n++;
    }
    closedir(d);
    return n;
}

/* The numbers of the command line, by the one grammar (core/base/number.h): decimal digits and
 * nothing else (no sign, space, hex, exponent), then the range; strtol took ' 1' and '', and
 * what it took was used. */
static int parse_int(const char *s, int lo, int hi, const char *what) {
    int v;
    hn_number_t r = hn_parse_int(s, lo, hi, &v);
    if (r == HN_NUMBER_RANGE) die(2, "%s '%s' is out of range: a whole number in %d .. %d", what, s, lo, hi);
    if (r != HN_NUMBER_OK)
        die(2, "%s '%s' is not a whole number in %d .. %d (decimal digits only: no sign, space, prefix or suffix)",
            what, s, lo, hi);
    return v;
}

/* Seconds: digits, optionally '.' and digits, in (0, 1e7]: what the library takes for
 * HIDET_NCCL_TIMEOUT, so that --timeout is refused here rather than by every rank. */
static double parse_seconds(const char *s, const char *what) {
    double v;
    hn_number_t r = hn_parse_decimal(s, 0, 1, 1e7, &v);
    if (r == HN_NUMBER_RANGE) die(2, "%s '%s' is out of range: seconds in (0, 10000000]", what, s);
    if (r != HN_NUMBER_OK)
        die(2, "%s '%s' is not a number of seconds in (0, 10000000] (decimal digits, optionally '.' and digits: "
            "30, 0.5; no sign, space or exponent)", what, s);
    return v;
}

/* --master-addr: a host name or address is never empty nor holds a space; the ranks would
 * take either and fail later, each with "no bootstrap found" or a resolver error. */
static const char *parse_host(const char *s, const char *what) {
    if (*s == '\0') die(2, "%s '' is empty: give rank 0's host name or address", what);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            die(2, "%s '%s' is not a host name or address (it holds a space or a control character)", what, s);
    return s;
}

/* --job-secret-file: an existing file, made absolute (the ranks may change directory); the
 * library checks what it holds and who may read it when a rank starts. */
static const char *parse_secret_file(const char *s) {
    static char path[PATH_MAX];
    if (*s == '\0') die(2, "--job-secret-file '' is empty");
    if (realpath(s, path) == NULL) die(2, "--job-secret-file %s: %s", s, strerror(errno));
    return path;
}

/* Removes this job's files from the private rendezvous directory, then the directory, never by
 * path: through the descriptors taken when it was made, so that a directory swapped for a
 * symbolic link to someone else's (in a parent others may write) loses nothing but what this
 * job made. 0 when done; -1 when the directory is not empty (a rank still dying may have just
 * written into it: the watchdog tries again). */
static int remove_rendezvous_once(void) {
    if (g.rendezvous[0] == '\0' || g.shared_dir || g.dir_fd < 0) return 0; /* a shared directory is the user's */
    char ours[96];
    snprintf(ours, sizeof ours, "hidet-nccl.%s.", g.key); /* the bootstrap's files, and their temporaries */
    int fd = dup(g.dir_fd);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (d != NULL) {
        for (struct dirent *e; (e = readdir(d)) != NULL;)
            if (strncmp(e->d_name, ours, strlen(ours)) == 0) unlinkat(g.dir_fd, e->d_name, 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    const char *base = strrchr(g.rendezvous, '/');
    /* not a link, nor a non-empty directory */
    if (unlinkat(g.parent_fd, base ? base + 1 : g.rendezvous, AT_REMOVEDIR) != 0 &&
        (errno == ENOTEMPTY || errno == EEXIST))
        return -1;
    return 0;
}

/* The exit's removal (atexit): once, then the descriptors go. */
static void remove_rendezvous(void) {
    if (g.rendezvous[0] == '\0' || g.shared_dir || g.dir_fd < 0) return;
    remove_rendezvous_once();
    close(g.dir_fd);
    close(g.parent_fd);
    g.dir_fd = g.parent_fd = -1;
    g.rendezvous[0] = '\0';
}

static void set_env_int(const char *name, int v) {
    char buf[16];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

/* In the child: environment, output, death with the launcher, then exec. */
static void start_child(int rank, int out_pipe[2], int err_pipe[2], int log_fd, pid_t launcher, char **argv) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(126); /* the launcher died before prctl */
    if (g.nofile_saved) setrlimit(RLIMIT_NOFILE, &g.nofile); /* the served rendezvous' need, not the rank's */
    setpgid(0, 0);                         /* its own group: stopping it stops its children too */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* -x first: the launcher's own variables below are never among them (refused) */
    for (int k = 0; k < g.n_env_x; k++)
        if (strchr(g.env_x[k], '=') != NULL) putenv(g.env_x[k]);
    int global = global_rank(rank), world = g.nnodes * g.n;
    set_env_int("HIDET_NCCL_RANK", global);
    set_env_int("HIDET_NCCL_LOCAL_RANK", rank);
    set_env_int("HIDET_NCCL_WORLD_SIZE", world);
    set_env_int("HIDET_NCCL_LOCAL_WORLD_SIZE", g.n);
    set_env_int("RANK", global);
    set_env_int("LOCAL_RANK", rank);
    set_env_int("WORLD_SIZE", world);
    set_env_int("LOCAL_WORLD_SIZE", g.n);
    if (g.key[0]) setenv("HIDET_NCCL_JOB_KEY", g.key, 1);
    if (g.master_addr) { /* the socket rendezvous: no directory, so that it is the one chosen */
        setenv("MASTER_ADDR", g.master_addr, 1);
        set_env_int("MASTER_PORT", g.master_port);
        setenv("HIDET_NCCL_RENDEZVOUS_SERVED", "1", 1); /* node 0's launcher serves it */
        unsetenv("HIDET_NCCL_RENDEZVOUS_DIR");
    } else {
        setenv("HIDET_NCCL_RENDEZVOUS_DIR", g.rendezvous, 1);
        unsetenv("HIDET_NCCL_RENDEZVOUS_SERVED");
    }
    if (g.timeout) setenv("HIDET_NCCL_TIMEOUT", g.timeout, 1);
    if (g.secret_file) setenv("HIDET_NCCL_JOB_SECRET_FILE", g.secret_file, 1);
    else if (g.secret[0]) setenv("HIDET_NCCL_JOB_SECRET", g.secret, 1);
    if (rank != 0) {
        int null = open("/dev/null", O_RDONLY);
        if (null >= 0) dup2(null, STDIN_FILENO);
    }
    if (out_pipe[1] >= 0) {
        dup2(out_pipe[1], STDOUT_FILENO);
        dup2(err_pipe[1], STDERR_FILENO);
    } else if (log_fd >= 0) {
        dup2(log_fd, STDOUT_FILENO);
        dup2(log_fd, STDERR_FILENO);
    }
    execvp(argv[0], argv);
    fprintf(stderr, "hidet-nccl-run: rank %d: cannot run %s: %s\n", global, argv[0], strerror(errno));
    _exit(127);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The slot that says which stream holds s's destination (its rank's log, or our stdout or
 * stderr, one slot for both when they are one file). */
static stream_t **holder_of(rank_t *r, const stream_t *s) {
    if (r->log_fd >= 0) return &r->log_holder;
    return &g.holder[s->dest == STDOUT_FILENO && !g.out_is_err ? 0 : 1];
}

/* 1 when another stream's long line is half written where s writes: s waits. */
static int held_from(rank_t *r, const stream_t *s) {
    const stream_t *h = *holder_of(r, s);
    return h != NULL && h != s;
}

/* The buffered bytes, byte for byte (a NUL in them included), with the tag (rank i's rank in
 * the job) when they start a line; line_ends: the line is complete (a newline added if it has
 * none), else more of it follows and s holds its destination until then. A write to a closed pipe fails with EPIPE,
 * and its SIGPIPE reaches the main loop through the signalfd. */
static void put_piece(rank_t *r, int i, stream_t *s, int line_ends) {
    char out[sizeof s->partial + 32];
    size_t m = g.tag_output && !s->mid_line ? (size_t)snprintf(out, 32, "[%d] ", global_rank(i)) : 0;
    memcpy(out + m, s->partial, s->len);
    m += s->len;
    if (line_ends && (s->len == 0 || s->partial[s->len - 1] != '\n')) out[m++] = '\n';
    s->len = 0;
    int fd = r->log_fd >= 0 ? r->log_fd : s->dest;
    for (size_t done = 0; done < m;) {
        ssize_t w = write(fd, out + done, m - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break; /* nowhere to report it */
        done += (size_t)w;
    }
    stream_t **h = holder_of(r, s);
    double t = now_s();
    if (line_ends) {
        s->mid_line = 0;
        if (*h == s) *h = NULL;
    } else {
        if (!s->mid_line) s->line_until = t + k_line_hold_s;
        s->mid_line = 1;
        s->piece_until = t + k_piece_gap_s;
        *h = s;
    }
}

/* Passes data on line by line (prefixed with [rank] when tagging), a line longer than the
 * buffer in pieces under one tag; eof ends the last line. */
static void emit(rank_t *r, int i, stream_t *s, const char *data, size_t n, int eof) {
    for (size_t k = 0; k < n; k++) {
        s->partial[s->len++] = data[k];
        if (data[k] == '\n') put_piece(r, i, s, 1);
        else if (s->len == sizeof s->partial) put_piece(r, i, s, 0);
    }
    if (eof && (s->len > 0 || s->mid_line)) put_piece(r, i, s, 1);
}

/* A held destination whose line has stopped coming (or has been held too long) is let go: the
 * line ends there; what follows of it is tagged anew. */
static void end_stalled_line(rank_t *r, int i, stream_t *s, double t) {
    if (s->mid_line && *holder_of(r, s) == s && (t >= s->piece_until || t >= s->line_until)) put_piece(r, i, s, 1);
}

/* Reads what is there and passes it on; at the end of the stream flushes the last line and
 * closes it. */
static void pump(rank_t *r, int i, stream_t *s) {
    char buf[4096];
    ssize_t n = read(s->fd, buf, sizeof buf);
    if (n > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) emit(r, i, s, buf, (size_t)n, 0);
        return;
    }
    emit(r, i, s, buf, 0, 1);
    close(s->fd);
    s->fd = -1;
}

/* An exited rank's group is over (killed, or found empty): the launcher and the watchdog
 * forget its number, which may be another group's from now on. */
static void group_over(int i) {
    g.ranks[i].group_kill_at = 0;
    watch_tell(i, 0);
}

/* sig to every rank's process group: the running ranks', and what is left of the groups of
 * ranks that have exited (their children) until those are killed. */
static void signal_all(int sig) {
    for (int i = 0; i < g.n; i++) {
        rank_t *r = &g.ranks[i];
        if (r->pid <= 0 || (r->done && r->group_kill_at == 0)) continue;
        kill(-r->pid, sig);
        if (sig == SIGKILL && r->done) group_over(i);
    }
}

/* The multi-node options agree with each other. */
static void check_nodes(void) {
    if (g.nnodes == 0) g.nnodes = 1;
    if (g.node_rank >= g.nnodes) die(2, "--node-rank %d is not in 0 .. %d (--nnodes %d)", g.node_rank, g.nnodes - 1, g.nnodes);
    if ((long)g.nnodes * g.n > MAX_RANKS * 16L) die(2, "--nnodes %d x -n %d ranks is too many", g.nnodes, g.n);
    int socket_kind = g.rendezvous_kind && strcmp(g.rendezvous_kind, "socket") == 0;
    if (g.rendezvous_kind && !socket_kind && g.master_addr)
        die(2, "--rendezvous file does not go with --master-addr (the socket rendezvous)");
    if (socket_kind && g.nnodes > 1 && !g.master_addr)
        die(2, "--rendezvous socket across nodes needs --master-addr (node 0's host) and --master-port");
    if (socket_kind && g.rendezvous_parent)
        die(2, "--rendezvous-dir goes with the file rendezvous, not --rendezvous socket");
    if (g.master_addr && g.master_port == 0 && !socket_kind) die(2, "--master-addr needs --master-port");
    if (!g.master_addr && g.master_port && !socket_kind) die(2, "--master-port needs --master-addr");
    if (socket_kind && !g.master_addr) g.master_addr = "127.0.0.1"; /* one node */
    g.serve = g.master_addr && g.node_rank == 0;
    if (g.job_key && (strlen(g.job_key) == 0 || strlen(g.job_key) > 64 ||
                      strspn(g.job_key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                          strlen(g.job_key)))
        die(2, "--job-key '%s' is not 1 to 64 of the characters A-Z a-z 0-9 . _ -", g.job_key);
    if (g.nnodes > 1 && !g.master_addr && !g.rendezvous_parent)
        die(2, "--nnodes %d needs --master-addr and --master-port (the socket rendezvous), or a --rendezvous-dir "
               "every node sees (the shared-file bootstrap)", g.nnodes);
    if (g.nnodes > 1 && !g.master_addr && !g.job_key)
        die(2, "--nnodes %d with --rendezvous-dir needs a --job-key, the same on every node", g.nnodes);
    /* Across nodes (checked above), or on one node when asked with a key: the user's directory. */
    g.shared_dir = !g.master_addr && g.rendezvous_parent && g.job_key;
}

/* --trace-dir (or the default of --trace-on-failure): made if missing, given to the ranks. */
static void set_trace_dir(void) {
    if (g.trace_dir == NULL && g.trace_on_failure) {
        const char *env = getenv("HIDET_NCCL_TRACE_DIR");
        g.trace_dir = env != NULL && *env ? env : "hidet-nccl-trace";
    }
    if (g.trace_dir == NULL) return;
    if (mkdir(g.trace_dir, 0700) != 0 && errno != EEXIST) die(2, "--trace-dir %s: %s", g.trace_dir, strerror(errno));
    struct stat st;
    if (lstat(g.trace_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        die(2, "--trace-dir %s is not a directory (a symbolic link is refused)", g.trace_dir);
    setenv("HIDET_NCCL_TRACE_DIR", g.trace_dir, 1);
}

/* The variables hidet-nccl-run sets for its ranks itself, and what they come from. A -x of one
 * is refused, naming it: the launcher's value would silently win (or, for the secret and the
 * deadline, fight it), and the rank, sizes and place to meet are the job's, not a rank's. */
static const struct {
    const char *name, *from;
} k_ours[] = {
    {"HIDET_NCCL_RANK", "-n, --nnodes and --node-rank"},
    {"HIDET_NCCL_LOCAL_RANK", "the rank's index on this node"},
    {"HIDET_NCCL_WORLD_SIZE", "-n and --nnodes"},
    {"HIDET_NCCL_LOCAL_WORLD_SIZE", "-n"},
    {"RANK", "-n, --nnodes and --node-rank"},
    {"LOCAL_RANK", "the rank's index on this node"},
    {"WORLD_SIZE", "-n and --nnodes"},
    {"LOCAL_WORLD_SIZE", "-n"},
    {"HIDET_NCCL_JOB_KEY", "--job-key, else a fresh one on one node"},
    {"HIDET_NCCL_RENDEZVOUS_DIR", "--rendezvous-dir"},
    {"MASTER_ADDR", "--master-addr"},
    {"MASTER_PORT", "--master-port"},
    {"HIDET_NCCL_RENDEZVOUS_SERVED", "--master-addr or --rendezvous socket"},
    {"HIDET_NCCL_TIMEOUT", "--timeout, else this environment's"},
    {"HIDET_NCCL_TRACE_DIR", "--trace-dir, else this environment's"},
    {"HIDET_NCCL_JOB_SECRET_FILE", "--job-secret-file, else this environment's"},
    {"HIDET_NCCL_JOB_SECRET", "this environment's as it is, else a fresh one on one node; export it: a secret "
                              "on a command line shows in ps"},
};

/* -x VAR=VALUE (VALUE for the ranks) or -x VAR (this environment's value, which must be there),
 * mpirun's habit: VAR a letter or '_', then letters, digits and '_'; not one of k_ours. Kept as
 * given; a rank puts the VAR=VALUE words into its environment before the launcher's own. The
 * messages name VAR, never VALUE (it may be a secret). */
static void add_env_x(char *arg) {
    const char *eq = strchr(arg, '=');
    size_t len = eq != NULL ? (size_t)(eq - arg) : strlen(arg);
    static const char k_name_chars[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
    if (len == 0 || (!isalpha((unsigned char)arg[0]) && arg[0] != '_') || strspn(arg, k_name_chars) != len)
        die(2, "-x: '%.*s' is not an environment variable's name (a letter or _, then letters, digits and _); "
            "give -x VAR=VALUE or -x VAR", (int)len, arg);
    for (size_t k = 0; k < sizeof k_ours / sizeof k_ours[0]; k++)
        if (strlen(k_ours[k].name) == len && strncmp(k_ours[k].name, arg, len) == 0)
            die(2, "-x %s: hidet-nccl-run sets %s for its ranks itself (from %s); it cannot be given with -x",
                k_ours[k].name, k_ours[k].name, k_ours[k].from);
    if (eq == NULL && getenv(arg) == NULL)
        die(2, "-x %s: %s is not set in hidet-nccl-run's environment (export it, or give -x %s=VALUE)", arg, arg,
            arg);
    g.env_x[g.n_env_x++] = arg;
}

/* What the ranks will see of a variable the launcher reads for them: the last -x VAR=VALUE of
 * it, else this environment's. */
static const char *rank_env(const char *name) {
    size_t len = strlen(name);
    for (int k = g.n_env_x - 1; k >= 0; k--)
        if (strncmp(g.env_x[k], name, len) == 0 && g.env_x[k][len] == '=') return g.env_x[k] + len + 1;
    return getenv(name);
}

/* The number of ranks, however spelt: -n N, -nN, --np N, torchrun's --nproc-per-node N and
 * --nproc_per_node N (longindex: the long option, or -1), and mpirun's -np N and -npN. getopt
 * reads "-np" as -n with the argument "p" (and "-np4" as -n "p4"): an argument taken from the
 * option's own word that starts with 'p' is -np's, whose number follows the 'p' or is the next
 * word (consumed here). "-n p" (two words) stays -n with a bad number. */
static int parse_count(int argc, char **argv, int longindex, const struct option *opts) {
    if (longindex >= 0) {
        char what[64];
        snprintf(what, sizeof what, "--%s", opts[longindex].name);
        return parse_int(optarg, 1, MAX_RANKS, what);
    }
    if (optarg != argv[optind - 1] && optarg[0] == 'p') {
        if (optarg[1] != '\0') return parse_int(optarg + 1, 1, MAX_RANKS, "-np");
        if (optind >= argc) die(2, "-np needs a number of ranks: -np N");
        return parse_int(argv[optind++], 1, MAX_RANKS, "-np");
    }
    return parse_int(optarg, 1, MAX_RANKS, "-n");
}

/* Options up to PROGRAM; returns the index of PROGRAM in argv. */
static int parse_args(int argc, char **argv) {
    g.grace_s = 5;
    g.trace_wait_s = 10;
    g.n = -1;
    g.parent_fd = g.dir_fd = g.output_fd = g.watch_fd = -1;
    g.env_x = calloc((size_t)argc, sizeof *g.env_x);
    if (g.env_x == NULL) die(1, "out of memory");
    static const struct option opts[] = {
        {"np", required_argument, NULL, 'n'},         {"tag-output", no_argument, NULL, 't'},
        {"nproc-per-node", required_argument, NULL, 'n'}, {"nproc_per_node", required_argument, NULL, 'n'},
        {"output-dir", required_argument, NULL, 'o'}, {"timeout", required_argument, NULL, 'T'},
        {"rendezvous-dir", required_argument, NULL, 'r'}, {"grace", required_argument, NULL, 'g'},
        {"keep-going", no_argument, NULL, 'k'},     {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},        {"nnodes", required_argument, NULL, 'N'},
        {"node-rank", required_argument, NULL, 'K'}, {"master-addr", required_argument, NULL, 'A'},
        {"master-port", required_argument, NULL, 'P'}, {"job-key", required_argument, NULL, 'J'},
        {"trace-dir", required_argument, NULL, 'D'}, {"trace-on-failure", no_argument, NULL, 'F'},
        {"trace-wait", required_argument, NULL, 'W'}, {"job-secret-file", required_argument, NULL, 'S'},
        {"rendezvous", required_argument, NULL, 'R'},
        {NULL, 0, NULL, 0},
    };
    int c, longindex = -1;
    while ((c = getopt_long(argc, argv, "+n:x:hV", opts, &longindex)) != -1) {
        switch (c) {
            case 'n': g.n = parse_count(argc, argv, longindex, opts); break;
            case 'x': add_env_x(optarg); break;
            case 't': g.tag_output = 1; break;
            case 'o': g.output_dir = optarg; break;
            case 'T': g.timeout_s = parse_seconds(optarg, "--timeout"); g.timeout = optarg; break;
            case 'r': g.rendezvous_parent = optarg; break;
            case 'g': g.grace_s = parse_seconds(optarg, "--grace"); break;
            case 'k': g.keep_going = 1; break;
            case 'N': g.nnodes = parse_int(optarg, 1, MAX_RANKS, "--nnodes"); break;
            case 'K': g.node_rank = parse_int(optarg, 0, MAX_RANKS - 1, "--node-rank"); break;
            case 'A': g.master_addr = parse_host(optarg, "--master-addr"); break;
            case 'P': g.master_port = parse_int(optarg, 1, 65535, "--master-port"); break;
            case 'J': g.job_key = optarg; break;
            case 'S': g.secret_file = parse_secret_file(optarg); break;
            case 'R':
                if (strcmp(optarg, "file") != 0 && strcmp(optarg, "socket") != 0)
                    die(2, "--rendezvous '%s' is not file or socket", optarg);
                g.rendezvous_kind = optarg;
                break;
            case 'D': g.trace_dir = optarg; break;
            case 'F': g.trace_on_failure = 1; break;
            case 'W': g.trace_wait_s = parse_seconds(optarg, "--trace-wait"); break;
            case 'h': usage(stdout); exit(0);
            case 'V':
                printf("hidet-nccl-run %d.%d.%d\n", HIDET_NCCL_VERSION_MAJOR, HIDET_NCCL_VERSION_MINOR,
                       HIDET_NCCL_VERSION_PATCH);
                exit(0);
            default: usage(stderr); exit(2);
        }
        longindex = -1;
    }
    if (optind >= argc) {
        fprintf(stderr, "hidet-nccl-run: no program to run\n");
        usage(stderr);
        exit(2);
    }
    if (g.n < 0) {
        g.n = visible_gpus();
        if (g.n == 0) die(2, "no GPU is visible (CUDA_VISIBLE_DEVICES, /dev/nvidia*): give the number of ranks with -n");
    }
    if (g.output_dir && mkdir(g.output_dir, 0755) != 0 && errno != EEXIST)
        die(2, "--output-dir %s: %s", g.output_dir, strerror(errno));
    g.output_fd = g.output_dir ? open(g.output_dir, O_DIRECTORY | O_CLOEXEC) : -1;
    if (g.output_dir && g.output_fd < 0) die(2, "--output-dir %s: %s", g.output_dir, strerror(errno));
    check_nodes();
    set_trace_dir();
    return optind;
}

/* The job's secret for the ranks: the file given, or one in the environment, as they are; on one
 * node without either, a fresh one (32 random bytes, hex), so that only the ranks this launcher
 * starts can join their rendezvous. Across nodes the launchers cannot agree on a fresh one. */
static int given(const char *name) { /* set and not empty, as the library's settings read it */
    const char *v = getenv(name);
    return v != NULL && *v != '\0';
}

static void make_secret(void) {
    if (g.secret_file || given("HIDET_NCCL_JOB_SECRET_FILE") || given("HIDET_NCCL_JOB_SECRET")) return;
    if (g.nnodes > 1) return; /* the library's rank 0 warns that the rendezvous is unauthenticated */
    unsigned char rnd[32];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) die(1, "getrandom: %s", strerror(errno));
    for (size_t i = 0; i < sizeof rnd; i++) snprintf(g.secret + 2 * i, 3, "%02x", rnd[i]);
    explicit_bzero(rnd, sizeof rnd);
}

static void fresh_key(void) {
    unsigned char rnd[8];
    if (getrandom(rnd, sizeof rnd, 0) != (ssize_t)sizeof rnd) die(1, "getrandom: %s", strerror(errno));
    snprintf(g.key, sizeof g.key, "run-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0], rnd[1], rnd[2], rnd[3], rnd[4],
             rnd[5], rnd[6], rnd[7]);
}

/* A fresh job key, and the job's private rendezvous directory (removed at every exit); or,
 * across nodes, the key given and the socket address or the shared directory as they are. */
static void make_rendezvous(void) {
    if (g.job_key) snprintf(g.key, sizeof g.key, "%s", g.job_key);
    if (g.master_addr && (g.job_key || g.nnodes > 1))
        return; /* across nodes without --job-key, the socket backend's socket-<port>, the same on every node */
    if (g.master_addr) { /* one node: a fresh key, so that two jobs on one port never mix */
        fresh_key();
        return;
    }
    if (g.shared_dir) {
        snprintf(g.rendezvous, sizeof g.rendezvous, "%s", g.rendezvous_parent);
        return; /* the user's directory: the bootstrap removes its files, the directory stays */
    }
    if (g.job_key)
        die(2, "--job-key goes with --nnodes, --master-addr or --rendezvous-dir (one node makes its own key)");
    fresh_key();
    const char *parent = g.rendezvous_parent ? g.rendezvous_parent : getenv("TMPDIR");
    if (parent == NULL || *parent == '\0') parent = "/tmp";
    snprintf(g.rendezvous, sizeof g.rendezvous, "%s/hidet-nccl-%s-XXXXXX", parent, g.key);
    if (mkdtemp(g.rendezvous) == NULL) {
        g.rendezvous[0] = '\0';
        die(1, "cannot make a rendezvous directory in %s: %s", parent, strerror(errno));
    }
    /* Hold the parent and the directory by descriptor at once: the exit removes through them. */
    g.parent_fd = open(parent, O_DIRECTORY | O_CLOEXEC);
    g.dir_fd = g.parent_fd < 0 ? -1
                               : openat(g.parent_fd, strrchr(g.rendezvous, '/') + 1, O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (g.dir_fd < 0 || fstat(g.dir_fd, &st) != 0 || st.st_uid != geteuid() || (st.st_mode & 077) != 0) {
        int e = errno;
        g.rendezvous[0] = '\0';
        die(1, "the rendezvous directory made in %s is not this user's private one (%s)", parent,
            g.dir_fd < 0 ? strerror(e) : "owner or mode changed");
    }
    atexit(remove_rendezvous);
}

/* The signals that would end the launcher by default (and so leave the rendezvous directory
 * behind): they stop the job, as Ctrl-C does. SIGPIPE is a reader of our output gone (`| head`):
 * the ranks get SIGTERM. SIGUSR1/SIGUSR2 are passed to the ranks and stop nothing themselves. */
static const int k_stopping[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM, SIGPIPE, SIGUSR1, SIGUSR2};

/* Signals arrive through a signalfd, so the main loop sees them in order. */
static int signal_fd(void) {
    sigset_t mask;
    sigemptyset(&mask);
    sigaddset(&mask, SIGCHLD);
    for (size_t i = 0; i < sizeof k_stopping / sizeof k_stopping[0]; i++) sigaddset(&mask, k_stopping[i]);
    sigprocmask(SIG_BLOCK, &mask, NULL);
    int sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
    if (sfd < 0) die(1, "signalfd: %s", strerror(errno));
    return sfd;
}

/* The watchdog. SIGKILL runs none of the launcher's code: the ranks die with it (their
 * PR_SET_PDEATHSIG), but not what they started (a fork does not inherit PDEATHSIG, and only the
 * launcher killed the ranks' process groups), and no atexit removes the rendezvous directory.
 * So a child of the launcher, in a process group of its own (a kill of the launcher's group,
 * as timeout(1) sends, spares it) and deaf to the signals that stop a job, holds one end of a
 * socket that only the launcher holds the other end of. The launcher tells it each rank's
 * process group, and when it has killed one (the number may be anyone's after that). When the
 * socket ends without the launcher's "done", the launcher is gone: the watchdog kills every
 * group it still knows and removes the private rendezvous directory. */
typedef struct {
    int32_t rank; /* -1: done, everything cleaned up by the launcher */
    int32_t pgid; /* the rank's process group; 0: the launcher killed it */
} watch_msg_t;

/* The watchdog is gone (killed by someone): say what that costs, once. */
static void watch_lost(const char *why) {
    if (g.watch_fd < 0) return;
    fprintf(stderr, "hidet-nccl-run: the watchdog (pid %d) %s: if this launcher is killed now, what its ranks "
            "started may be left running\n", (int)g.watch_pid, why);
    close(g.watch_fd);
    g.watch_fd = -1;
}

static void watch_tell(int rank, pid_t pgid) {
    if (g.watch_fd < 0) return;
    watch_msg_t m = {rank, (int32_t)pgid};
    ssize_t w;
    do {
        w = send(g.watch_fd, &m, sizeof m, MSG_NOSIGNAL); /* no SIGPIPE: that one means our output is gone */
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)sizeof m) watch_lost(w < 0 ? strerror(errno) : "took part of a message");
}

/* The watchdog's end: after "done", nothing to do; the launcher waits for it to exit. */
static void watch_done(void) {
    watch_tell(-1, 0);
    if (g.watch_fd >= 0) { /* still there: the message went */
        close(g.watch_fd);
        g.watch_fd = -1;
    }
    if (g.watch_pid > 0) waitpid(g.watch_pid, NULL, 0);
    g.watch_pid = 0;
}

/* In the watchdog: its own process group, the stopping signals ignored (Ctrl-C reaches the
 * launcher, which stops the job and then says "done"), no hold on our stdin and stdout. */
static void watchdog_setup(int sfd) {
    setpgid(0, 0);
    close(sfd);
    if (g.output_fd >= 0) close(g.output_fd);
    static const int k_deaf[] = {SIGTSTP, SIGTTIN, SIGTTOU};
    for (size_t i = 0; i < sizeof k_stopping / sizeof k_stopping[0]; i++) signal(k_stopping[i], SIG_IGN);
    for (size_t i = 0; i < sizeof k_deaf / sizeof k_deaf[0]; i++) signal(k_deaf[i], SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, STDIN_FILENO);
        dup2(null, STDOUT_FILENO);
        if (null > STDERR_FILENO) close(null);
    }
}

/* In the watchdog: the launcher's messages until the socket ends, then, unless it said "done",
 * its cleanup. A dying rank may still write into the rendezvous directory after the kill:
 * the removal is tried again for up to 2 s. _exit: the launcher's atexit work is not ours. */
static void watchdog_run(int fd, pid_t *pgid, pid_t launcher) __attribute__((noreturn));
static void watchdog_run(int fd, pid_t *pgid, pid_t launcher) {
    for (;;) {
        watch_msg_t m;
        ssize_t got = recv(fd, &m, sizeof m, 0);
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)sizeof m) break; /* end of file: the launcher has exited or was killed */
        if (m.rank < 0) _exit(0);
        if (m.rank < g.n) pgid[m.rank] = m.pgid;
    }
    int killed = 0;
    for (int i = 0; i < g.n; i++)
        if (pgid[i] > 0 && kill(-pgid[i], SIGKILL) == 0) killed++;
    int left = 0;
    for (int tries = 0; (left = remove_rendezvous_once()) != 0 && tries < 100; tries++) usleep(20 * 1000);
    fprintf(stderr, "hidet-nccl-run: the launcher (pid %d) ended without stopping its ranks: its watchdog killed %d "
            "rank process group(s)\n", (int)launcher, killed);
    if (left) fprintf(stderr, "hidet-nccl-run: watchdog: cannot empty the rendezvous directory %s\n", g.rendezvous);
    _exit(0);
}

/* Starts the watchdog: after the signals are blocked (a Ctrl-C now is the job's, not the end
 * of either process) and before any rank (a rank holds the launcher's end only until its exec,
 * which closes it). */
static void start_watchdog(int sfd) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) die(1, "socketpair: %s", strerror(errno));
    pid_t *pgid = calloc((size_t)g.n, sizeof *pgid);
    if (pgid == NULL) die(1, "out of memory");
    pid_t launcher = getpid();
    pid_t pid = fork();
    if (pid < 0) die(1, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(sv[0]);
        watchdog_setup(sfd);
        watchdog_run(sv[1], pgid, launcher);
    }
    setpgid(pid, pid); /* also here, so that it is in its own group before any signal to ours */
    free(pgid);
    close(sv[1]);
    g.watch_fd = sv[0];
    g.watch_pid = pid;
}

/* The parent of a process, from /proc/PID/stat ("pid (comm) state ppid ...": comm may hold
 * spaces and parentheses, so the fields are read after the last ')'); -1 when it is gone. */
static pid_t parent_of(const char *pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%s/stat", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')');
    char state;
    int ppid;
    return p != NULL && sscanf(p + 1, " %c %d", &state, &ppid) == 2 ? (pid_t)ppid : -1;
}

/* SIGKILL to every child of the launcher but the watchdog: as their subreaper, the launcher is
 * the parent of every orphan the ranks left, whatever group or session it moved to. How many
 * it signalled (zombies included, reaped next; one it may not signal, a setuid program, is not
 * waited for). */
static int kill_children(void) {
    DIR *d = opendir("/proc");
    if (d == NULL) return 0;
    pid_t self = getpid();
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        uint64_t pid;
        if (hn_parse_uint(e->d_name, 1, INT32_MAX, &pid) != HN_NUMBER_OK || (pid_t)pid == g.watch_pid) continue;
        if (parent_of(e->d_name) == self && kill((pid_t)pid, SIGKILL) == 0) n++;
    }
    closedir(d);
    return n;
}

/* At the end, after the ranks' groups are killed: every child left (what escaped its rank's
 * group with setsid or setpgid) is killed and reaped, and the children those leave come to us
 * in turn, until none is left; one that does not die within 2 s (stuck in the kernel) is left
 * and counted. */
static void sweep_children(void) {
    double until = now_s() + 2;
    for (;;) {
        for (pid_t pid; (pid = waitpid(-1, NULL, WNOHANG)) > 0;)
            if (pid == g.watch_pid) {
                g.watch_pid = 0;
                watch_lost("has exited");
            }
        int left = kill_children();
        if (left == 0) return;
        if (now_s() >= until) {
            fprintf(stderr, "hidet-nccl-run: %d process(es) the ranks started are still there 2 s after SIGKILL\n",
                    left);
            return;
        }
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
}

/* Rank i's log, rank.<its rank in the job>.log (nodes that share the directory write their own
 * files), created new through the output directory's descriptor and never through a
 * symbolic link: a log this user left before is replaced; a link, or a file of another user,
 * (planted in a directory others may write) is refused. fd, or -1 and why. */
static int open_log(int i, char *why, size_t why_bytes) {
    char name[32];
    snprintf(name, sizeof name, "rank.%d.log", global_rank(i));
    for (int attempt = 0; attempt < 2; attempt++) {
        int fd = openat(g.output_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd >= 0) return fd;
        if (errno != EEXIST) break;
        struct stat st;
        if (fstatat(g.output_fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
        if (!S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
            snprintf(why, why_bytes, "%s is %s; refused (remove it, or use a directory only you can write)", name,
                     S_ISLNK(st.st_mode) ? "a symbolic link" : !S_ISREG(st.st_mode) ? "not a regular file"
                                                                                     : "owned by another user");
            return -1;
        }
        unlinkat(g.output_fd, name, 0); /* this user's log of an earlier run */
    }
    snprintf(why, why_bytes, "cannot create %s: %s", name, strerror(errno));
    return -1;
}

/* Starts rank i: its log file, its pipes (when tagging), the child. */
static void spawn(int i, char **child_argv) {
    rank_t *r = &g.ranks[i];
    r->log_fd = -1;
    r->out[0] = (stream_t){.fd = -1, .dest = STDOUT_FILENO};
    r->out[1] = (stream_t){.fd = -1, .dest = STDERR_FILENO};
    int op[2] = {-1, -1}, ep[2] = {-1, -1};
    if (g.output_dir) {
        char why[256];
        r->log_fd = open_log(i, why, sizeof why);
        if (r->log_fd < 0) {
            signal_all(SIGKILL);
            die(1, "--output-dir %s: %s", g.output_dir, why);
        }
    }
    if (g.tag_output && (pipe2(op, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0)) {
        signal_all(SIGKILL);
        die(1, "pipe: %s", strerror(errno));
    }
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        signal_all(SIGKILL);
        die(1, "fork: %s", strerror(errno));
    }
    if (pid == 0) start_child(i, op, ep, r->log_fd, self, child_argv);
    setpgid(pid, pid); /* also here, so the group exists before any kill */
    r->pid = pid;
    watch_tell(i, pid);
    if (g.tag_output) {
        close(op[1]);
        close(ep[1]);
        r->out[0].fd = op[0];
        r->out[1].fd = ep[0];
    }
}

/* What the main loop tracks. */
typedef struct {
    int first_rank, first_code, running, forwarded;
    double trace_until;    /* --trace-on-failure: the others dump until then, then get SIGTERM; 0: none */
    struct timespec failed_at; /* when the first rank failed: a dump newer than this is in */
    double stop_deadline;  /* SIGKILL for what is left then; < 0: none */
    double drain_deadline; /* once every rank has exited: stop reading their pipes then */
} job_t;

/* Passes signals on to every rank's group: SIGUSR1/SIGUSR2 as they are; the others stop the
 * job (SIGPIPE as SIGTERM, since the ranks' pipes are ours) and start the grace period. A
 * second one while stopping, or one after every rank has exited, kills what is left at once. */
static void forward_signals(int sfd, job_t *job) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) continue; /* reaped below */
        if (sig == SIGUSR1 || sig == SIGUSR2) {
            signal_all(sig);
            continue;
        }
        if (job->forwarded || job->running == 0) {
            signal_all(SIGKILL);
            job->drain_deadline = now_s();
            if (!job->forwarded) job->forwarded = sig;
            continue;
        }
        fprintf(stderr, "hidet-nccl-run: got signal %d (%s); %s every rank\n", sig, strsignal(sig),
                sig == SIGPIPE ? "our output is gone: stopping" : "forwarding it to");
        signal_all(sig == SIGPIPE ? SIGTERM : sig);
        job->forwarded = sig;
        if (job->stop_deadline < 0) job->stop_deadline = now_s() + g.grace_s;
    }
}

/* --trace-on-failure: SIGUSR1 to every running rank (its flight recorder dumps), which then
 * has until trace_until to write it. */
static void ask_for_dumps(job_t *job, int failed) {
    clock_gettime(CLOCK_REALTIME, &job->failed_at);
    int asked = 0;
    for (int i = 0; i < g.n; i++)
        if (!g.ranks[i].done && kill(g.ranks[i].pid, SIGUSR1) == 0) asked++;
    job->trace_until = now_s() + g.trace_wait_s;
    fprintf(stderr, "hidet-nccl-run: rank %d failed; %d other rank(s) asked for their flight recorder dumps "
            "(SIGUSR1, up to %.0f s); read them with: hidet-nccl-trace %s\n", global_rank(failed), asked,
            g.trace_wait_s, g.trace_dir);
}

/* 1 when every running rank's dump was written after the failure. */
static int dumps_in(const job_t *job) {
    for (int i = 0; i < g.n; i++) {
        if (g.ranks[i].done) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/" HIDET_NCCL_TRACE_FILE_PREFIX "%d" HIDET_NCCL_TRACE_FILE_SUFFIX, g.trace_dir,
                 global_rank(i));
        struct stat st;
        if (stat(path, &st) != 0 || st.st_mtim.tv_sec < job->failed_at.tv_sec ||
            (st.st_mtim.tv_sec == job->failed_at.tv_sec && st.st_mtim.tv_nsec < job->failed_at.tv_nsec))
            return 0;
    }
    return 1;
}

/* At the end of the dump wait (or once every dump is in): the usual stop. */
static void end_dump_wait(job_t *job) {
    if (job->trace_until == 0 || (now_s() < job->trace_until && !dumps_in(job))) return;
    job->trace_until = 0;
    if (job->running > 0 && !job->forwarded) {
        signal_all(SIGTERM);
        job->stop_deadline = now_s() + g.grace_s;
    }
}

/* Collects exited ranks; the first failure stops the others (unless --keep-going). */
static void reap(job_t *job) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG); /* a rank, an orphan it left (we are its subreaper) */
        if (pid <= 0) return;
        if (pid == g.watch_pid) {
            g.watch_pid = 0;
            watch_lost(WIFSIGNALED(status) ? "was killed" : "has exited");
        }
        for (int i = 0; i < g.n; i++) {
            rank_t *r = &g.ranks[i];
            if (r->pid != pid || r->done) continue;
            r->done = 1;
            r->status = status;
            job->running--;
            /* what it left running (torchrun ends a worker's group too); nothing: the group is over */
            if (kill(-r->pid, SIGTERM) == 0) r->group_kill_at = now_s() + g.grace_s;
            else group_over(i);
            if (job->running == 0) job->drain_deadline = now_s() + g.grace_s + 0.5;
            int failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            if (failed && job->first_rank < 0 && !job->forwarded) {
                job->first_rank = i;
                job->first_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
                if (job->running > 0 && !g.keep_going && g.trace_on_failure) {
                    ask_for_dumps(job, i);
                } else if (job->running > 0 && !g.keep_going) {
                    signal_all(SIGTERM);
                    job->stop_deadline = now_s() + g.grace_s;
                }
            }
        }
    }
}

/* 1 while a rank's pipe is open. */
static int pipes_open(void) {
    for (int i = 0; i < g.n; i++)
        if (g.ranks[i].out[0].fd >= 0 || g.ranks[i].out[1].fd >= 0) return 1;
    return 0;
}

/* When the hold of a destination ends at the latest (0: none held). */
static double hold_ends(const stream_t *h) {
    if (h == NULL) return 0;
    return h->piece_until < h->line_until ? h->piece_until : h->line_until;
}

/* The earliest of the deadlines the loop keeps, as a poll timeout in ms (-1: none). */
static int next_wait_ms(const job_t *job) {
    double next = job->stop_deadline > 0 ? job->stop_deadline : 0;
    if (job->trace_until > 0) next = now_s() + 0.05; /* look for the dumps every 50 ms */
    if (job->running == 0 && (next == 0 || job->drain_deadline < next)) next = job->drain_deadline;
    double at[2] = {hold_ends(g.holder[0]), hold_ends(g.holder[1])};
    for (int w = 0; w < 2; w++)
        if (at[w] > 0 && (next == 0 || at[w] < next)) next = at[w];
    for (int i = 0; i < g.n; i++) {
        const rank_t *r = &g.ranks[i];
        double log_at = hold_ends(r->log_holder);
        if (r->group_kill_at > 0 && (next == 0 || r->group_kill_at < next)) next = r->group_kill_at;
        if (log_at > 0 && (next == 0 || log_at < next)) next = log_at;
    }
    if (next == 0) return -1;
    double left = next - now_s();
    return left > 0 ? (int)(left * 1000) + 1 : 0;
}

/* SIGKILL for the groups whose time is up: every one at the stop deadline, an exited rank's
 * grace period after it exited. */
static void kill_overdue(job_t *job) {
    double t = now_s();
    if (job->stop_deadline > 0 && t >= job->stop_deadline) {
        signal_all(SIGKILL);
        job->stop_deadline = -1;
    }
    for (int i = 0; i < g.n; i++) {
        rank_t *r = &g.ranks[i];
        if (r->group_kill_at > 0 && t >= r->group_kill_at) {
            kill(-r->pid, SIGKILL);
            group_over(i);
        }
    }
}

/* Node 0's launcher under --keep-going, its own ranks ended: the rendezvous it serves outlives
 * them while the other nodes' ranks are connected (they may be recovering without node 0's
 * ranks), until a signal asks it to stop. */
static void serve_the_others(int sfd) {
    int live = 0;
    if (g.rv == NULL || g.nnodes < 2 || !g.keep_going || hidet_nccl_rendezvous_live(g.rv, &live) != HIDET_NCCL_SUCCESS || live == 0)
        return;
    fprintf(stderr, "hidet-nccl-run: this node's ranks ended; serving the rendezvous while the other nodes' ranks "
                    "are connected (%d bootstrap%s)\n", live, live == 1 ? "" : "s");
    while (hidet_nccl_rendezvous_live(g.rv, &live) == HIDET_NCCL_SUCCESS && live > 0) {
        struct pollfd p = {sfd, POLLIN, 0};
        if (poll(&p, 1, 100) > 0) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGCHLD && si.ssi_signo != SIGPIPE)
                return; /* SIGINT, SIGTERM, SIGHUP: stop serving */
        }
    }
}

/* Every held destination whose hold is over is let go. */
static void end_stalled_lines(void) {
    double t = now_s();
    for (int i = 0; i < g.n; i++)
        for (int w = 0; w < 2; w++) end_stalled_line(&g.ranks[i], i, &g.ranks[i].out[w], t);
}

/* Until every rank has exited and their output is read: output, signals, exits, the grace
 * periods. A process a rank left behind that keeps the pipe open (`sleep 100 &`) holds the
 * loop only for the grace period, after which its group is killed and the pipe let go. A
 * stream whose destination another stream holds is not read until it is let go. */
static void run_loop(int sfd, job_t *job) {
    struct pollfd *fds = calloc((size_t)(2 * g.n + 1), sizeof *fds);
    if (fds == NULL) die(1, "out of memory");
    while (job->running > 0 || (pipes_open() && now_s() < job->drain_deadline)) {
        int k = 0;
        fds[k++] = (struct pollfd){sfd, POLLIN, 0};
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                stream_t *s = &g.ranks[i].out[w];
                fds[k++] = (struct pollfd){held_from(&g.ranks[i], s) ? -1 : s->fd, POLLIN, 0};
            }
        int pr = poll(fds, (nfds_t)k, next_wait_ms(job));
        if (pr < 0 && errno != EINTR) break;
        kill_overdue(job);
        end_stalled_lines();
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                const struct pollfd *p = &fds[1 + 2 * i + w];
                stream_t *s = &g.ranks[i].out[w];
                /* held since the poll: a stream read just before took the destination */
                if (p->fd >= 0 && (p->revents & (POLLIN | POLLHUP | POLLERR)) && !held_from(&g.ranks[i], s))
                    pump(&g.ranks[i], i, s);
            }
        forward_signals(sfd, job);
        reap(job);
        end_dump_wait(job);
    }
    free(fds);
}

/* The exit code: the first failing rank's, 128+signal when stopped by one, else 0. */
static int report(const job_t *job) {
    if (job->first_rank >= 0) {
        int st = g.ranks[job->first_rank].status;
        const char *others = g.keep_going ? "the other ranks were left to finish (--keep-going)"
                                          : "the other ranks were stopped";
        if (WIFEXITED(st))
            fprintf(stderr, "hidet-nccl-run: rank %d exited with code %d; %s\n", global_rank(job->first_rank),
                    job->first_code, others);
        else
            fprintf(stderr, "hidet-nccl-run: rank %d was killed by signal %d (%s); %s\n",
                    global_rank(job->first_rank), WTERMSIG(st), strsignal(WTERMSIG(st)), others);
        return job->first_code;
    }
    if (job->forwarded) {
        fprintf(stderr, "hidet-nccl-run: stopped by signal %d (%s)\n", job->forwarded, strsignal(job->forwarded));
        return 128 + job->forwarded;
    }
    return 0;
}

/* At the end: each stream's last line ended (the lines half out first, so that no other line
 * lands inside them); a pipe still held by a process we could not kill is let go. */
static void flush_all(void) {
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                rank_t *r = &g.ranks[i];
                stream_t *s = &r->out[w];
                if (s->fd >= 0 && (pass == 1 || s->mid_line)) {
                    emit(r, i, s, NULL, 0, 1);
                    close(s->fd);
                    s->fd = -1;
                }
            }
    for (int i = 0; i < g.n; i++)
        if (g.ranks[i].log_fd >= 0) close(g.ranks[i].log_fd);
}

/* 1 when our stdout and stderr are one file (2>&1, one terminal): their lines share its holds. */
static int out_is_err(void) {
    struct stat o, e;
    return fstat(STDOUT_FILENO, &o) == 0 && fstat(STDERR_FILENO, &e) == 0 && o.st_dev == e.st_dev &&
           o.st_ino == e.st_ino;
}

/* Node 0 of a socket rendezvous serves it (include/hidet_nccl/rendezvous.h) before any rank starts,
 * with the job's key, size and secret as its ranks will have them (the secret put into this
 * process's environment, where the rendezvous reads it as the ranks do); a port of the
 * system's choice (one node, no --master-port) becomes the ranks' MASTER_PORT. */
static void serve_rendezvous(void) {
    if (!g.serve) return;
    if (g.secret_file) setenv("HIDET_NCCL_JOB_SECRET_FILE", g.secret_file, 1);
    else if (g.secret[0]) setenv("HIDET_NCCL_JOB_SECRET", g.secret, 1);
    hidet_nccl_settings_reload();
    g.nofile_saved = getrlimit(RLIMIT_NOFILE, &g.nofile) == 0;
    hidet_nccl_rendezvous_params_t p = HIDET_NCCL_RENDEZVOUS_PARAMS_INIT;
    p.port = g.master_port;
    p.job_key = g.key[0] ? g.key : given("HIDET_NCCL_JOB_KEY") ? getenv("HIDET_NCCL_JOB_KEY") : NULL; /* the ranks' */
    p.nranks = g.nnodes * g.n;
    p.timeout_s = g.timeout_s;
    if (hidet_nccl_rendezvous_start(&p, &g.rv) != HIDET_NCCL_SUCCESS)
        die(1, "cannot serve the socket rendezvous: %s", hidet_nccl_last_error());
    hidet_nccl_rendezvous_port(g.rv, &g.master_port);
}

int main(int argc, char **argv) {
    char **child_argv = argv + parse_args(argc, argv);
    /* The ranks' orphans become our children, whatever group or session they moved to, so the
     * end of the job finds them (on a kernel without it, they go to init as before). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    g.out_is_err = out_is_err();
    int sfd = signal_fd();
    make_rendezvous();
    make_secret();
    start_watchdog(sfd);
    serve_rendezvous();
    g.ranks = calloc((size_t)g.n, sizeof *g.ranks);
    if (g.ranks == NULL) die(1, "out of memory");
    for (int i = 0; i < g.n; i++) spawn(i, child_argv);
    job_t job = {-1, 0, g.n, 0, 0, {0, 0}, -1, 0};
    run_loop(sfd, &job);
    serve_the_others(sfd);
    signal_all(SIGKILL); /* nothing a rank started outlives the launcher */
    sweep_children();    /* ... in its group or out of it */
    flush_all();
    hidet_nccl_rendezvous_stop(g.rv);
    remove_rendezvous();
    watch_done();
    return report(&job);
}
