/* The watchdog, a child of the launcher that cleans up after it when it is killed (why and how:
 * below), and the launcher's side of their socket: each rank's process group told, "done" said,
 * the watchdog's loss reported. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/run/run.h"

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
void run_watch_lost(const char *why) {
    if (g.watch_fd < 0) return;
    fprintf(stderr, "hidet-nccl-run: the watchdog (pid %d) %s: if this launcher is killed now, what its ranks "
            "started may be left running\n", (int)g.watch_pid, why);
    close(g.watch_fd);
    g.watch_fd = -1;
}

void run_watch_tell(int rank, pid_t pgid) {
    if (g.watch_fd < 0) return;
    watch_msg_t m = {rank, (int32_t)pgid};
    ssize_t w;
    do {
        w = send(g.watch_fd, &m, sizeof m, MSG_NOSIGNAL); /* no SIGPIPE: that one means our output is gone */
    } while (w < 0 && errno == EINTR);
    if (w != (ssize_t)sizeof m) run_watch_lost(w < 0 ? strerror(errno) : "took part of a message");
}

/* The watchdog's end: after "done", nothing to do; the launcher waits for it to exit. */
void run_watch_done(void) {
    run_watch_tell(-1, 0);
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
    run_ignore_stopping();
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
    for (int tries = 0; (left = run_remove_rendezvous_once()) != 0 && tries < 100; tries++) usleep(20 * 1000);
    fprintf(stderr, "hidet-nccl-run: the launcher (pid %d) ended without stopping its ranks: its watchdog killed %d "
            "rank process group(s)\n", (int)launcher, killed);
    if (left) fprintf(stderr, "hidet-nccl-run: watchdog: cannot empty the rendezvous directory %s\n", g.rendezvous);
    _exit(0);
}

/* Starts the watchdog: after the signals are blocked (a Ctrl-C now is the job's, not the end
 * of either process) and before any rank (a rank holds the launcher's end only until its exec,
 * which closes it). */
void run_start_watchdog(int sfd) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0) run_die(1, "socketpair: %s", strerror(errno));
    pid_t *pgid = calloc((size_t)g.n, sizeof *pgid);
    if (pgid == NULL) run_die(1, "out of memory");
    pid_t launcher = getpid();
    pid_t pid = fork();
    if (pid < 0) run_die(1, "fork: %s", strerror(errno));
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
