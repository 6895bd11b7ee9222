/* --max-restarts N, the policy of a rank's restart (torchrun's option, per rank as torchrun's is
 * per agent; torchelastic restarts every worker, this restarts the one that died). A rank dies
 * when it exits non-zero or by a signal; an exit 0 is a finished rank, never started again.
 * While the job goes on (run_stop.c asks: no signal stopping it, no failure stopping it), a
 * rank that dies with restarts left is started again as the same rank (rank, local rank, sizes,
 * key, rendezvous, secret, -x: the environment the first start had, so the same GPU choice) with
 * HIDET_NCCL_RESTART_COUNT one more, --restart-delay seconds after its death and once what is
 * left of its process group has gone (SIGTERM at the death, SIGKILL at the delay's end; started
 * anyway --grace seconds after that, saying so): one process per rank at any time. Until then
 * the rank counts as running, not failed: the others are not stopped. The N+1-th failure is the
 * rank's failure as without restarts. Each step is said on stderr, with the rank, the count and
 * the cause. A stop of the job (a signal, another rank's failure) calls pending restarts off. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "tools/run/run.h"

/* What ended a process: "exit 3", "killed by signal 9 (SIGKILL)". */
static const char *cause(int status, char *buf, size_t n) {
    if (WIFEXITED(status)) {
        snprintf(buf, n, "exit %d", WEXITSTATUS(status));
    } else {
        const char *abbrev = sigabbrev_np(WTERMSIG(status));
        if (abbrev != NULL) snprintf(buf, n, "killed by signal %d (SIG%s)", WTERMSIG(status), abbrev);
        else snprintf(buf, n, "killed by signal %d", WTERMSIG(status));
    }
    return buf;
}

/* Rank i has died (run_reap) while the job goes on: 1 when it will be started again (said),
 * 0 when it has no restarts (none asked for, or all spent: said) and its death is a failure. */
int run_restart_take(int i) {
    rank_t *r = &g.ranks[i];
    char why[64];
    if (g.max_restarts == 0) return 0;
    if (r->restarts >= g.max_restarts) {
        fprintf(stderr, "hidet-nccl-run: rank %d failed %d times; no restarts left (--max-restarts %d; the last: %s)\n",
                run_global_rank(i), r->restarts + 1, g.max_restarts, cause(r->status, why, sizeof why));
        return 0;
    }
    r->restart_at = run_now() + g.restart_delay_s;
    r->restart_cap = 0;
    fprintf(stderr, "hidet-nccl-run: rank %d failed (%s); restart %d of %d in %g s\n", run_global_rank(i),
            cause(r->status, why, sizeof why), r->restarts + 1, g.max_restarts, g.restart_delay_s);
    return 1;
}

/* The job stops (why): rank i's pending restart, if any, is called off (said). 1 if there was
 * one: the rank is now a finished one to the caller. */
int run_restart_call_off(int i, const char *why) {
    rank_t *r = &g.ranks[i];
    if (r->restart_at == 0) return 0;
    r->restart_at = 0;
    fprintf(stderr, "hidet-nccl-run: rank %d: restart %d of %d called off (%s)\n", run_global_rank(i),
            r->restarts + 1, g.max_restarts, why);
    return 1;
}

/* Starts the ranks whose delay is over: what is left of the earlier group gets SIGKILL, and
 * the start waits until it is gone (reaped by the main loop), or --grace seconds. */
void run_restart_due(void) {
    double t = run_now();
    for (int i = 0; i < g.n; i++) {
        rank_t *r = &g.ranks[i];
        if (r->restart_at == 0 || t < r->restart_at) continue;
        if (r->restart_cap == 0) r->restart_cap = t + g.grace_s;
        if (run_group_left(i)) {
            if (t < r->restart_cap) continue;
            fprintf(stderr, "hidet-nccl-run: rank %d: its earlier process group %d still has processes %g s after "
                    "SIGKILL; starting it again all the same\n", run_global_rank(i), (int)r->pid, g.grace_s);
        }
        r->restart_at = 0;
        r->restarts++;
        run_respawn(i);
        fprintf(stderr, "hidet-nccl-run: rank %d: restart %d of %d started (pid %d)\n", run_global_rank(i),
                r->restarts, g.max_restarts, (int)r->pid);
    }
}

/* When the main loop must look again for a due restart (0: none pending): the delay's end, or
 * every 10 ms while an earlier group is going. */
double run_restart_next(void) {
    double next = 0;
    for (int i = 0; i < g.n; i++) {
        const rank_t *r = &g.ranks[i];
        if (r->restart_at == 0) continue;
        double at = r->restart_cap > 0 ? run_now() + 0.01 : r->restart_at;
        if (next == 0 || at < next) next = at;
    }
    return next;
}
