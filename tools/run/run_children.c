/* The ranks as processes, the mechanism apart from the policy: each started in a process group
 * of its own that dies with the launcher (PR_SET_PDEATHSIG), its group told to the watchdog,
 * and started so again, as the same rank, when the caller restarts it;
 * signals to every group; what has exited collected (whether that stops the job is the
 * caller's, told through a callback); what is left of an exited rank's group killed after the
 * grace period; at the end, as their subreaper, every process the ranks left swept. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/base/number.h"
#include "tools/run/run.h"

/* In the child: environment, output, death with the launcher, then exec. */
static void start_child(int rank, int restarts, int out_pipe[2], int err_pipe[2], int log_fd, pid_t launcher,
                        char **argv) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != launcher) _exit(126); /* the launcher died before prctl */
    if (g.nofile_saved) setrlimit(RLIMIT_NOFILE, &g.nofile); /* the served rendezvous' need, not the rank's */
    setpgid(0, 0);                         /* its own group: stopping it stops its children too */
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    run_rank_environment(rank, restarts); /* -x, then the launcher's own */
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
    fprintf(stderr, "hidet-nccl-run: rank %d: cannot run %s: %s\n", run_global_rank(rank), argv[0], strerror(errno));
    _exit(127);
}

/* Starts rank i's process into its log (opened by the caller) or new pipes (when tagging): a
 * process group of its own, told to the watchdog. */
static void start(int i) {
    rank_t *r = &g.ranks[i];
    r->out[0] = (stream_t){.fd = -1, .dest = STDOUT_FILENO};
    r->out[1] = (stream_t){.fd = -1, .dest = STDERR_FILENO};
    int op[2] = {-1, -1}, ep[2] = {-1, -1};
    if (g.tag_output && (pipe2(op, O_CLOEXEC) != 0 || pipe2(ep, O_CLOEXEC) != 0)) {
        run_signal_all(SIGKILL);
        run_die(1, "pipe: %s", strerror(errno));
    }
    pid_t self = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        run_signal_all(SIGKILL);
        run_die(1, "fork: %s", strerror(errno));
    }
    if (pid == 0) start_child(i, r->restarts, op, ep, r->log_fd, self, g.child_argv);
    setpgid(pid, pid); /* also here, so the group exists before any kill */
    r->pid = pid;
    run_watch_tell(i, pid);
    if (g.tag_output) {
        close(op[1]);
        close(ep[1]);
        r->out[0].fd = op[0];
        r->out[1].fd = ep[0];
    }
}

/* Starts rank i: its log file (a log of an earlier run replaced), its process. */
void run_spawn(int i) {
    rank_t *r = &g.ranks[i];
    r->log_fd = -1;
    if (g.output_dir) {
        char why[256];
        r->log_fd = run_open_log(i, why, sizeof why);
        if (r->log_fd < 0) {
            run_signal_all(SIGKILL);
            run_die(1, "--output-dir %s: %s", g.output_dir, why);
        }
    }
    start(i);
}

/* Starts rank i again (its restart count set by the caller), as the same rank: its log written
 * on after the earlier process's lines, its pipes' last lines passed on first. The earlier
 * process has been reaped and its group is over (run_group_left): one process per rank. */
void run_respawn(int i) {
    rank_t *r = &g.ranks[i];
    run_end_streams(i);
    r->done = 0;
    r->status = 0;
    r->group_kill_at = 0;
    start(i);
}

/* An exited rank's group is over (killed, or found empty): the launcher and the watchdog
 * forget its number, which may be another group's from now on. */
static void group_over(int i) {
    g.ranks[i].group_kill_at = 0;
    run_watch_tell(i, 0);
}

/* sig to every rank's process group: the running ranks', and what is left of the groups of
 * ranks that have exited (their children) until those are killed. */
void run_signal_all(int sig) {
    for (int i = 0; i < g.n; i++) {
        rank_t *r = &g.ranks[i];
        if (r->pid <= 0 || (r->done && r->group_kill_at == 0)) continue;
        kill(-r->pid, sig);
        if (sig == SIGKILL && r->done) group_over(i);
    }
}

/* Collects what has exited: the watchdog (its loss said), an orphan a rank left (we are its
 * subreaper: reaped, nothing more), or a rank, marked done, whose group gets SIGTERM for what it
 * left running (SIGKILL after the grace period); exited(job, i) is told of each rank that
 * exited: what that means for the job is the caller's. */
void run_reap(job_t *job, void (*exited)(job_t *job, int i)) {
    for (;;) {
        int status;
        pid_t pid = waitpid(-1, &status, WNOHANG); /* a rank, an orphan it left (we are its subreaper) */
        if (pid <= 0) return;
        if (pid == g.watch_pid) {
            g.watch_pid = 0;
            run_watch_lost(WIFSIGNALED(status) ? "was killed" : "has exited");
        }
        for (int i = 0; i < g.n; i++) {
            rank_t *r = &g.ranks[i];
            if (r->pid != pid || r->done) continue;
            r->done = 1;
            r->status = status;
            /* what it left running (torchrun ends a worker's group too); nothing: the group is over */
            if (kill(-r->pid, SIGTERM) == 0) r->group_kill_at = run_now() + g.grace_s;
            else group_over(i);
            exited(job, i);
        }
    }
}

/* An exited rank's group before a restart: what is left of it gets SIGKILL (once; it got
 * SIGTERM when the rank exited); 1 while a process of it is still there (a zombie included,
 * until it is reaped), 0 once it is empty. */
int run_group_left(int i) {
    rank_t *r = &g.ranks[i];
    if (r->group_kill_at > 0) {
        kill(-r->pid, SIGKILL);
        group_over(i);
    }
    return kill(-r->pid, 0) == 0 || errno != ESRCH;
}

/* SIGKILL for what is left of an exited rank's group once its grace period is over (at t). */
void run_kill_overdue_groups(double t) {
    for (int i = 0; i < g.n; i++) {
        rank_t *r = &g.ranks[i];
        if (r->group_kill_at > 0 && t >= r->group_kill_at) {
            kill(-r->pid, SIGKILL);
            group_over(i);
        }
    }
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
void run_sweep_children(void) {
    double until = run_now() + 2;
    for (;;) {
        for (pid_t pid; (pid = waitpid(-1, NULL, WNOHANG)) > 0;)
            if (pid == g.watch_pid) {
                g.watch_pid = 0;
                run_watch_lost("has exited");
            }
        int left = kill_children();
        if (left == 0) return;
        if (run_now() >= until) {
            fprintf(stderr, "hidet-nccl-run: %d process(es) the ranks started are still there 2 s after SIGKILL\n",
                    left);
            return;
        }
        nanosleep(&(struct timespec){0, 5 * 1000 * 1000}, NULL);
    }
}

/* run_die's last words (g.at_die): once the watchdog runs, what the ranks started goes, and the
 * watchdog is told the launcher is done. */
void run_die_sweep(void) {
    if (g.watch_pid > 0) {
        run_sweep_children();
        run_watch_done();
    }
}
