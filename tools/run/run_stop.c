/* The job's course, the policy over run_children.c: a rank that dies with restarts left goes on
 * (run_restart.c), the first failing rank stops the others (unless --keep-going; after the
 * dumps with --trace-on-failure), a signal stops the job (a second one kills), SIGTERM then
 * SIGKILL after the grace period, and calls restarts off; the deadlines the main loop waits
 * for; the launcher's exit code. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/run/run.h"

/* A rank is over for the job (exited, or its restart called off): one fewer running; once none
 * runs, their pipes are read until the grace period is over. */
static void rank_over(job_t *job) {
    job->running--;
    if (job->running == 0) job->drain_deadline = run_now() + g.grace_s + 0.5;
}

/* The job stops (why): no rank is started again; a rank whose restart was pending is over. */
static void call_off_restarts(job_t *job, const char *why) {
    for (int i = 0; i < g.n; i++)
        if (run_restart_call_off(i, why)) rank_over(job);
}

/* 1 once the job is stopping: a signal stopped it, or a failure (without --keep-going). */
static int stopping(const job_t *job) { return job->forwarded || (job->first_rank >= 0 && !g.keep_going); }

/* Passes signals on to every rank's group: SIGUSR1/SIGUSR2 as they are; the others stop the
 * job (SIGPIPE as SIGTERM, since the ranks' pipes are ours; pending restarts called off) and
 * start the grace period. A second one while stopping, or one after every rank has exited,
 * kills what is left at once. */
void run_forward_signals(int sfd, job_t *job) {
    struct signalfd_siginfo si;
    while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGCHLD) continue; /* reaped below */
        if (sig == SIGUSR1 || sig == SIGUSR2) {
            run_signal_all(sig);
            continue;
        }
        if (job->forwarded || job->running == 0) {
            run_signal_all(SIGKILL);
            job->drain_deadline = run_now();
            if (!job->forwarded) job->forwarded = sig;
            continue;
        }
        fprintf(stderr, "hidet-nccl-run: got signal %d (%s); %s every rank\n", sig, strsignal(sig),
                sig == SIGPIPE ? "our output is gone: stopping" : "forwarding it to");
        run_signal_all(sig == SIGPIPE ? SIGTERM : sig);
        job->forwarded = sig;
        if (job->stop_deadline < 0) job->stop_deadline = run_now() + g.grace_s;
        char why[64];
        snprintf(why, sizeof why, "got signal %d (%s)", sig, strsignal(sig));
        call_off_restarts(job, sig == SIGPIPE ? "our output is gone" : why);
    }
}

/* A rank has exited (run_reap): a death with restarts left starts it again (run_restart.c) and
 * the rank still counts as running; else the first failure stops the others (unless
 * --keep-going), and calls off the restarts pending. */
void run_rank_exited(job_t *job, int i) {
    int status = g.ranks[i].status;
    int failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (failed && !stopping(job) && run_restart_take(i)) return;
    rank_over(job);
    if (failed && job->first_rank < 0 && !job->forwarded) {
        job->first_rank = i;
        job->first_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (!g.keep_going) {
            char why[64];
            snprintf(why, sizeof why, "rank %d failed", run_global_rank(i));
            call_off_restarts(job, why);
        }
        if (job->running > 0 && !g.keep_going && g.trace_on_failure) {
            run_ask_for_dumps(job, i);
        } else if (job->running > 0 && !g.keep_going) {
            run_signal_all(SIGTERM);
            job->stop_deadline = run_now() + g.grace_s;
        }
    }
}

/* The earliest of the deadlines the loop keeps, as a poll timeout in ms (-1: none). */
int run_next_wait_ms(const job_t *job) {
    double next = job->stop_deadline > 0 ? job->stop_deadline : 0;
    if (job->trace_until > 0) next = run_now() + 0.05; /* look for the dumps every 50 ms */
    double restart = run_restart_next();
    if (restart > 0 && (next == 0 || restart < next)) next = restart;
    if (job->running == 0 && (next == 0 || job->drain_deadline < next)) next = job->drain_deadline;
    double at[2] = {run_hold_ends(g.holder[0]), run_hold_ends(g.holder[1])};
    for (int w = 0; w < 2; w++)
        if (at[w] > 0 && (next == 0 || at[w] < next)) next = at[w];
    for (int i = 0; i < g.n; i++) {
        const rank_t *r = &g.ranks[i];
        double log_at = run_hold_ends(r->log_holder);
        if (r->group_kill_at > 0 && (next == 0 || r->group_kill_at < next)) next = r->group_kill_at;
        if (log_at > 0 && (next == 0 || log_at < next)) next = log_at;
    }
    if (next == 0) return -1;
    double left = next - run_now();
    return left > 0 ? (int)(left * 1000) + 1 : 0;
}

/* SIGKILL for the groups whose time is up: every one at the stop deadline, an exited rank's
 * grace period after it exited. */
void run_kill_overdue(job_t *job) {
    double t = run_now();
    if (job->stop_deadline > 0 && t >= job->stop_deadline) {
        run_signal_all(SIGKILL);
        job->stop_deadline = -1;
    }
    run_kill_overdue_groups(t);
}

/* The exit code: the first failing rank's, 128+signal when stopped by one, else 0. */
int run_report(const job_t *job) {
    if (job->first_rank >= 0) {
        int st = g.ranks[job->first_rank].status;
        const char *others = g.keep_going ? "the other ranks were left to finish (--keep-going)"
                                          : "the other ranks were stopped";
        if (WIFEXITED(st))
            fprintf(stderr, "hidet-nccl-run: rank %d exited with code %d; %s\n", run_global_rank(job->first_rank),
                    job->first_code, others);
        else
            fprintf(stderr, "hidet-nccl-run: rank %d was killed by signal %d (%s); %s\n",
                    run_global_rank(job->first_rank), WTERMSIG(st), strsignal(WTERMSIG(st)), others);
        return job->first_code;
    }
    if (job->forwarded) {
        fprintf(stderr, "hidet-nccl-run: stopped by signal %d (%s)\n", job->forwarded, strsignal(job->forwarded));
        return 128 + job->forwarded;
    }
    return 0;
}
