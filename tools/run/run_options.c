/* hidet-nccl-run's command line: the options up to PROGRAM (mpirun's -np and -x, torchrun's
 * --nproc-per-node), their numbers by the one grammar, the checks that the multi-node options
 * agree, the number of ranks when none is given (the visible GPUs), and usage. A bad option
 * ends the launcher with status 2 before anything is started. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/base/number.h"
#include "hidet_nccl/hidet_nccl.h"
#include "tools/run/run.h"

#define MAX_RANKS 4096

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
            "                         4096 bytes, yours, mode 600, not a symbolic link):\n"
            "                         HIDET_NCCL_JOB_SECRET_FILE; the ranks of the socket\n"
            "                         rendezvous prove they hold it. One node\n"
            "                         makes a fresh secret itself; across nodes without one (or\n"
            "                         $HIDET_NCCL_JOB_SECRET[_FILE]) the rendezvous is unauthenticated\n"
            "      --trace-dir DIR    the ranks' flight recorders record (off without a trace\n"
            "                         directory) and dump into DIR (made if missing):\n"
            "                         HIDET_NCCL_TRACE_DIR; read the dumps with hidet-nccl-trace DIR\n"
            "      --trace-on-failure when a rank fails, send the others SIGUSR1 (a flight recorder\n"
            "                         dump) and give them up to --trace-wait S (10) to write it before\n"
            "                         stopping them; the trace directory is --trace-dir, else\n"
            "                         $HIDET_NCCL_TRACE_DIR, else ./hidet-nccl-trace\n"
            "      --keep-going       when a rank fails, leave the others running (they see the\n"
            "                         failure through their own timeouts); the exit code is\n"
            "                         still that of the first rank that failed\n"
            "      --max-restarts N   a rank that dies (exits non-zero or by a signal; an exit 0 is\n"
            "                         a finished rank) is started again, up to N times (0 .. 1000;\n"
            "                         0, the default: never), as the same rank with the environment\n"
            "                         its first start had (so on the same GPU) and\n"
            "                         HIDET_NCCL_RESTART_COUNT=k at its k-th restart (0 at the first\n"
            "                         start); meanwhile the others go on. Its N+1-th failure is a\n"
            "                         failure as without it. Also --max_restarts N (torchrun)\n"
            "      --restart-delay S  seconds from a rank's death to its restart (1; 0 .. 3600);\n"
            "                         what it left running gets SIGTERM at its death, SIGKILL then,\n"
            "                         and the new process starts once that is gone\n"
            "  -h, --help             this text\n"
            "  -V, --version          the version\n"
            "\n"
            "Each rank gets HIDET_NCCL_RANK, HIDET_NCCL_LOCAL_RANK, HIDET_NCCL_WORLD_SIZE,\n"
            "HIDET_NCCL_LOCAL_WORLD_SIZE (and RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE),\n"
            "HIDET_NCCL_JOB_KEY and HIDET_NCCL_RENDEZVOUS_DIR, or MASTER_ADDR, MASTER_PORT and\n"
            "HIDET_NCCL_RENDEZVOUS_SERVED=1, HIDET_NCCL_RESTART_COUNT (0; k at its k-th restart), the\n"
            "job's secret (HIDET_NCCL_JOB_SECRET, fresh and random, on one node; HIDET_NCCL_JOB_SECRET_FILE\n"
            "with --job-secret-file); a secret already in the environment is passed on as it is.\n"
            "Tags, log names and messages name a rank by its rank in the job. When a rank fails (with\n"
            "--max-restarts: when it has no restarts left), the others get SIGTERM, then SIGKILL after\n"
            "the grace period, and hidet-nccl-run exits with that rank's code (128+signal if it was\n"
            "killed). SIGINT, SIGTERM, SIGHUP, SIGQUIT and SIGALRM are forwarded to every rank and stop\n"
            "the job and its restarts (a second one kills at once); SIGUSR1 and SIGUSR2 are forwarded;\n"
            "a closed output (| head) stops the ranks with SIGTERM. Each rank runs in its own process\n"
            "group: what a rank leaves running gets SIGTERM when it exits and SIGKILL after the grace\n"
            "period; what left the group (setsid) is killed when hidet-nccl-run exits. If\n"
            "hidet-nccl-run is killed (SIGKILL), the ranks die with it and a watchdog kills their\n"
            "process groups and removes the rendezvous directory.\n");
}

static int visible_gpus(void) {
    const char *v = run_rank_env("CUDA_VISIBLE_DEVICES");
    if (v != NULL) {
        int n = 0, in_item = 0;
        for (const char *p = v; *p; p++) {
            if (*p == ',') in_item = 0;
            else if (*p != ' ' && !in_item) { in_item = 1; n++; }
        }
        if (n > MAX_RANKS)
            run_die(2, "CUDA_VISIBLE_DEVICES lists %d devices, more than the %d ranks one launcher starts: give -n", n,
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
    if (r == HN_NUMBER_RANGE) run_die(2, "%s '%s' is out of range: a whole number in %d .. %d", what, s, lo, hi);
    if (r != HN_NUMBER_OK)
        run_die(2, "%s '%s' is not a whole number in %d .. %d (decimal digits only: no sign, space, prefix or suffix)",
            what, s, lo, hi);
    return v;
}

/* Seconds: digits, optionally '.' and digits, in (0, 1e7]: what the library takes for
 * HIDET_NCCL_TIMEOUT, so that --timeout is refused here rather than by every rank. */
static double parse_seconds(const char *s, const char *what) {
    double v;
    hn_number_t r = hn_parse_decimal(s, 0, 1, 1e7, &v);
    if (r == HN_NUMBER_RANGE) run_die(2, "%s '%s' is out of range: seconds in (0, 10000000]", what, s);
    if (r != HN_NUMBER_OK)
        run_die(2, "%s '%s' is not a number of seconds in (0, 10000000] (decimal digits, optionally '.' and digits: "
            "30, 0.5; no sign, space or exponent)", what, s);
    return v;
}

/* --restart-delay: seconds in [0, 3600] (0: at once), by the one grammar. */
static double parse_delay(const char *s) {
    double v;
    hn_number_t r = hn_parse_decimal(s, 0, 0, 3600, &v);
    if (r == HN_NUMBER_RANGE) run_die(2, "--restart-delay '%s' is out of range: seconds in [0, 3600]", s);
    if (r != HN_NUMBER_OK)
        run_die(2, "--restart-delay '%s' is not a number of seconds in [0, 3600] (decimal digits, optionally '.' "
            "and digits: 1, 0.5; no sign, space or exponent)", s);
    return v;
}

/* --master-addr: a host name or address is never empty nor holds a space; the ranks would
 * take either and fail later, each with "no bootstrap found" or a resolver error. */
static const char *parse_host(const char *s, const char *what) {
    if (*s == '\0') run_die(2, "%s '' is empty: give rank 0's host name or address", what);
    for (const char *p = s; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            run_die(2, "%s '%s' is not a host name or address (it holds a space or a control character)", what, s);
    return s;
}

/* --job-secret-file: an existing file, made absolute (the ranks may change directory); the
 * library checks what it holds and who may read it when a rank starts. A symbolic link is
 * refused, as the library refuses one in HIDET_NCCL_JOB_SECRET_FILE (it opens the file
 * O_NOFOLLOW): resolved here, its target would reach the ranks as if given. Links in the
 * directories above are followed, there as here. */
static const char *parse_secret_file(const char *s) {
    static char path[PATH_MAX];
    struct stat st;
    if (*s == '\0') run_die(2, "--job-secret-file '' is empty");
    if (lstat(s, &st) == 0 && S_ISLNK(st.st_mode))
        run_die(2, "--job-secret-file %s: a symbolic link (give the file itself, as HIDET_NCCL_JOB_SECRET_FILE must)", s);
    if (realpath(s, path) == NULL) run_die(2, "--job-secret-file %s: %s", s, strerror(errno));
    return path;
}

/* The multi-node options agree with each other. */
static void check_nodes(void) {
    if (g.nnodes == 0) g.nnodes = 1;
    if (g.node_rank >= g.nnodes) run_die(2, "--node-rank %d is not in 0 .. %d (--nnodes %d)", g.node_rank, g.nnodes - 1, g.nnodes);
    if ((long)g.nnodes * g.n > MAX_RANKS * 16L) run_die(2, "--nnodes %d x -n %d ranks is too many", g.nnodes, g.n);
    int socket_kind = g.rendezvous_kind && strcmp(g.rendezvous_kind, "socket") == 0;
    if (g.rendezvous_kind && !socket_kind && g.master_addr)
        run_die(2, "--rendezvous file does not go with --master-addr (the socket rendezvous)");
    if (socket_kind && g.nnodes > 1 && !g.master_addr)
        run_die(2, "--rendezvous socket across nodes needs --master-addr (node 0's host) and --master-port");
    if (socket_kind && g.rendezvous_parent)
        run_die(2, "--rendezvous-dir goes with the file rendezvous, not --rendezvous socket");
    if (g.master_addr && g.master_port == 0 && !socket_kind) run_die(2, "--master-addr needs --master-port");
    if (!g.master_addr && g.master_port && !socket_kind) run_die(2, "--master-port needs --master-addr");
    if (socket_kind && !g.master_addr) g.master_addr = "127.0.0.1"; /* one node */
    g.serve = g.master_addr && g.node_rank == 0;
    if (g.job_key && (strlen(g.job_key) == 0 || strlen(g.job_key) > 64 ||
                      strspn(g.job_key, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") !=
                          strlen(g.job_key)))
        run_die(2, "--job-key '%s' is not 1 to 64 of the characters A-Z a-z 0-9 . _ -", g.job_key);
    if (g.nnodes > 1 && !g.master_addr && !g.rendezvous_parent)
        run_die(2, "--nnodes %d needs --master-addr and --master-port (the socket rendezvous), or a --rendezvous-dir "
                   "every node sees (the shared-file bootstrap)", g.nnodes);
    if (g.nnodes > 1 && !g.master_addr && !g.job_key)
        run_die(2, "--nnodes %d with --rendezvous-dir needs a --job-key, the same on every node", g.nnodes);
    /* Across nodes (checked above), or on one node when asked with a key: the user's directory. */
    g.shared_dir = !g.master_addr && g.rendezvous_parent && g.job_key;
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
        if (optind >= argc) run_die(2, "-np needs a number of ranks: -np N");
        return parse_int(argv[optind++], 1, MAX_RANKS, "-np");
    }
    return parse_int(optarg, 1, MAX_RANKS, "-n");
}

/* Options up to PROGRAM; returns the index of PROGRAM in argv. */
int run_parse_args(int argc, char **argv) {
    g.grace_s = 5;
    g.trace_wait_s = 10;
    g.restart_delay_s = 1;
    g.n = -1;
    g.parent_fd = g.dir_fd = g.output_fd = g.watch_fd = -1;
    g.env_x = calloc((size_t)argc, sizeof *g.env_x);
    if (g.env_x == NULL) run_die(1, "out of memory");
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
        {"rendezvous", required_argument, NULL, 'R'}, {"max-restarts", required_argument, NULL, 'M'},
        {"max_restarts", required_argument, NULL, 'M'}, {"restart-delay", required_argument, NULL, 'B'},
        {NULL, 0, NULL, 0},
    };
    int c, longindex = -1;
    while ((c = getopt_long(argc, argv, "+n:x:hV", opts, &longindex)) != -1) {
        switch (c) {
            case 'n': g.n = parse_count(argc, argv, longindex, opts); break;
            case 'x': run_add_env_x(optarg); break;
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
                    run_die(2, "--rendezvous '%s' is not file or socket", optarg);
                g.rendezvous_kind = optarg;
                break;
            case 'D': g.trace_dir = optarg; break;
            case 'F': g.trace_on_failure = 1; break;
            case 'W': g.trace_wait_s = parse_seconds(optarg, "--trace-wait"); break;
            case 'M': g.max_restarts = parse_int(optarg, 0, 1000, opts[longindex].name[3] == '_' ? "--max_restarts"
                                                                                                   : "--max-restarts"); break;
            case 'B': g.restart_delay_s = parse_delay(optarg); break;
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
        if (g.n == 0)
            run_die(2, "no GPU is visible (CUDA_VISIBLE_DEVICES, /dev/nvidia*): give the number of ranks with -n");
    }
    if (g.output_dir && mkdir(g.output_dir, 0755) != 0 && errno != EEXIST)
        run_die(2, "--output-dir %s: %s", g.output_dir, strerror(errno));
    g.output_fd = g.output_dir ? open(g.output_dir, O_DIRECTORY | O_CLOEXEC) : -1;
    if (g.output_dir && g.output_fd < 0) run_die(2, "--output-dir %s: %s", g.output_dir, strerror(errno));
    check_nodes();
    run_set_trace_dir();
    return optind;
}
