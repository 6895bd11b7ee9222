/* The socket rendezvous that node 0's launcher serves (include/hidet_nccl/rendezvous.h, a thread
 * of this process): started before any rank, with the job's key, size and secret; kept while
 * the other nodes' ranks are connected after this node's have ended (--keep-going); stopped by
 * main at the end. */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "hidet_nccl/hidet_nccl.h"
#include "hidet_nccl/rendezvous.h"
#include "tools/run/run.h"

/* Node 0 of a socket rendezvous serves it (include/hidet_nccl/rendezvous.h) before any rank starts,
 * with the job's key, size and secret as its ranks will have them (the secret put into this
 * process's environment, where the rendezvous reads it as the ranks do); a port of the
 * system's choice (one node, no --master-port) becomes the ranks' MASTER_PORT. */
void run_serve_rendezvous(void) {
    if (!g.serve) return;
    if (g.secret_file) setenv("HIDET_NCCL_JOB_SECRET_FILE", g.secret_file, 1);
    else if (g.secret[0]) setenv("HIDET_NCCL_JOB_SECRET", g.secret, 1);
    hidet_nccl_settings_reload();
    g.nofile_saved = getrlimit(RLIMIT_NOFILE, &g.nofile) == 0;
    hidet_nccl_rendezvous_params_t p = HIDET_NCCL_RENDEZVOUS_PARAMS_INIT;
    p.port = g.master_port;
    p.job_key = g.key[0] ? g.key
                         : run_given("HIDET_NCCL_JOB_KEY") ? getenv("HIDET_NCCL_JOB_KEY") : NULL; /* the ranks' */
    p.nranks = g.nnodes * g.n;
    p.timeout_s = g.timeout_s;
    if (hidet_nccl_rendezvous_start(&p, &g.rv) != HIDET_NCCL_SUCCESS)
        run_die(1, "cannot serve the socket rendezvous: %s", hidet_nccl_last_error());
    hidet_nccl_rendezvous_port(g.rv, &g.master_port);
}

/* Node 0's launcher under --keep-going, its own ranks ended: the rendezvous it serves outlives
 * them while the other nodes' ranks are connected (they may be recovering without node 0's
 * ranks), until a stopping signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGALRM) asks it to stop.
 * SIGUSR1 and SIGUSR2 are the ranks' (they stop nothing, and this node's ranks have ended), as
 * SIGCHLD and SIGPIPE are nobody's: serving goes on. */
void run_serve_the_others(int sfd) {
    int live = 0;
    if (g.rv == NULL || g.nnodes < 2 || !g.keep_going || hidet_nccl_rendezvous_live(g.rv, &live) != HIDET_NCCL_SUCCESS || live == 0)
        return;
    fprintf(stderr, "hidet-nccl-run: this node's ranks ended; serving the rendezvous while the other nodes' ranks "
                    "are connected (%d bootstrap%s)\n", live, live == 1 ? "" : "s");
    while (hidet_nccl_rendezvous_live(g.rv, &live) == HIDET_NCCL_SUCCESS && live > 0) {
        struct pollfd p = {sfd, POLLIN, 0};
        struct signalfd_siginfo si;
        if (poll(&p, 1, 100) <= 0 || read(sfd, &si, sizeof si) != (ssize_t)sizeof si) continue;
        int sig = (int)si.ssi_signo;
        if (sig == SIGUSR1 || sig == SIGUSR2 || sig == SIGCHLD || sig == SIGPIPE) continue;
        fprintf(stderr, "hidet-nccl-run: got signal %d (%s); no longer serving the rendezvous (the other nodes' ranks "
                        "still connected to it lose it: %d bootstrap%s)\n", sig, strsignal(sig), live,
                live == 1 ? "" : "s");
        return;
    }
}
