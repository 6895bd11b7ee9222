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
 * exit code is the launcher's; with --max-restarts a rank that dies is started again, as the same
 * rank, before its death counts as a failure. Nothing the ranks start outlives the launcher:
 *   - the ranks die with it (PR_SET_PDEATHSIG);
 *   - it is their children's subreaper (PR_SET_CHILD_SUBREAPER), so what a rank leaves behind,
 *     even in a session of its own, becomes the launcher's child and is killed at its exit;
 *   - a watchdog (a child in a process group of its own) kills every rank's process group and
 *     removes the private rendezvous directory when the launcher dies without saying it is done,
 *     as under SIGKILL, which runs none of the launcher's code.
 * The habits of the launchers users know are taken: mpirun's -np N and -x VAR[=VALUE],
 * torchrun's --nproc-per-node N (--nproc_per_node). See usage() in run_options.c; the parts of
 * the launcher, a file each: run.h. This file: main and the main loop. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>

#include "hidet_nccl/rendezvous.h"
#include "tools/run/run.h"

/* Until every rank has exited and their output is read: output, signals, exits, the grace
 * periods. A process a rank left behind that keeps the pipe open (`sleep 100 &`) holds the
 * loop only for the grace period, after which its group is killed and the pipe let go. A
 * stream whose destination another stream holds is not read until it is let go. */
static void run_loop(int sfd, job_t *job) {
    struct pollfd *fds = calloc((size_t)(2 * g.n + 1), sizeof *fds);
    if (fds == NULL) run_die(1, "out of memory");
    while (job->running > 0 || (run_pipes_open() && run_now() < job->drain_deadline)) {
        int k = 0;
        fds[k++] = (struct pollfd){sfd, POLLIN, 0};
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                stream_t *s = &g.ranks[i].out[w];
                fds[k++] = (struct pollfd){run_held_from(&g.ranks[i], s) ? -1 : s->fd, POLLIN, 0};
            }
        int pr = poll(fds, (nfds_t)k, run_next_wait_ms(job));
        if (pr < 0 && errno != EINTR) break;
        run_kill_overdue(job);
        run_end_stalled_lines();
        for (int i = 0; i < g.n; i++)
            for (int w = 0; w < 2; w++) {
                const struct pollfd *p = &fds[1 + 2 * i + w];
                stream_t *s = &g.ranks[i].out[w];
                /* held since the poll: a stream read just before took the destination */
                if (p->fd >= 0 && (p->revents & (POLLIN | POLLHUP | POLLERR)) && !run_held_from(&g.ranks[i], s))
                    run_pump(&g.ranks[i], i, s);
            }
        run_forward_signals(sfd, job);
        run_reap(job, run_rank_exited);
        run_restart_due();
        run_end_dump_wait(job);
    }
    free(fds);
}

int main(int argc, char **argv) {
    g.child_argv = argv + run_parse_args(argc, argv);
    /* The ranks' orphans become our children, whatever group or session they moved to, so the
     * end of the job finds them (on a kernel without it, they go to init as before). */
    prctl(PR_SET_CHILD_SUBREAPER, 1);
    g.out_is_err = run_out_is_err();
    int sfd = run_signal_fd();
    run_make_rendezvous();
    run_make_secret();
    g.at_die = run_die_sweep; /* from the watchdog on, die sweeps what the ranks started */
    run_start_watchdog(sfd);
    run_serve_rendezvous();
    g.ranks = calloc((size_t)g.n, sizeof *g.ranks);
    if (g.ranks == NULL) run_die(1, "out of memory");
    for (int i = 0; i < g.n; i++) run_spawn(i);
    job_t job = {-1, 0, g.n, 0, 0, {0, 0}, -1, 0};
    run_loop(sfd, &job);
    run_serve_the_others(sfd);
    run_signal_all(SIGKILL); /* nothing a rank started outlives the launcher */
    run_sweep_children();    /* ... in its group or out of it */
    run_flush_all();
    hidet_nccl_rendezvous_stop(g.rv);
    run_remove_rendezvous();
    run_watch_done();
    return run_report(&job);
}
