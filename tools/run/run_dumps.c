/* The flight recorder dumps: --trace-dir (made if missing, given to the ranks), and with
 * --trace-on-failure, when a rank fails, SIGUSR1 to the others and a wait for their dumps
 * (up to --trace-wait, or until every dump is newer than the failure) before the usual stop. */
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "hidet_nccl/hidet_nccl.h"
#include "tools/run/run.h"

/* --trace-dir (or the default of --trace-on-failure): made if missing, given to the ranks. */
void run_set_trace_dir(void) {
    if (g.trace_dir == NULL && g.trace_on_failure) {
        const char *env = getenv("HIDET_NCCL_TRACE_DIR");
        g.trace_dir = env != NULL && *env ? env : "hidet-nccl-trace";
    }
    if (g.trace_dir == NULL) return;
    if (mkdir(g.trace_dir, 0700) != 0 && errno != EEXIST)
        run_die(2, "--trace-dir %s: %s", g.trace_dir, strerror(errno));
    struct stat st;
    if (lstat(g.trace_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        run_die(2, "--trace-dir %s is not a directory (a symbolic link is refused)", g.trace_dir);
    setenv("HIDET_NCCL_TRACE_DIR", g.trace_dir, 1);
}

/* --trace-on-failure: SIGUSR1 to every running rank (its flight recorder dumps), which then
 * has until trace_until to write it. */
void run_ask_for_dumps(job_t *job, int failed) {
    /* The file system stamps a file with the kernel's coarse clock (its last tick): the failure's
     * time from the same clock, else a dump written within a tick after it looks older. */
    clock_gettime(CLOCK_REALTIME_COARSE, &job->failed_at);
    int asked = 0;
    for (int i = 0; i < g.n; i++)
        if (!g.ranks[i].done && kill(g.ranks[i].pid, SIGUSR1) == 0) asked++;
    job->trace_until = run_now() + g.trace_wait_s;
    fprintf(stderr, "hidet-nccl-run: rank %d failed; %d other rank(s) asked for their flight recorder dumps "
            "(SIGUSR1, up to %.0f s); read them with: hidet-nccl-trace %s\n", run_global_rank(failed), asked,
            g.trace_wait_s, g.trace_dir);
}

/* 1 when every running rank's dump was written after the failure. */
static int dumps_in(const job_t *job) {
    for (int i = 0; i < g.n; i++) {
        if (g.ranks[i].done) continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/" HIDET_NCCL_TRACE_FILE_PREFIX "%d" HIDET_NCCL_TRACE_FILE_SUFFIX, g.trace_dir,
                 run_global_rank(i));
        struct stat st;
        if (stat(path, &st) != 0 || st.st_mtim.tv_sec < job->failed_at.tv_sec ||
            (st.st_mtim.tv_sec == job->failed_at.tv_sec && st.st_mtim.tv_nsec < job->failed_at.tv_nsec))
            return 0;
    }
    return 1;
}

/* At the end of the dump wait (or once every dump is in): the usual stop. */
void run_end_dump_wait(job_t *job) {
    if (job->trace_until == 0 || (run_now() < job->trace_until && !dumps_in(job))) return;
    job->trace_until = 0;
    if (job->running > 0 && !job->forwarded) {
        run_signal_all(SIGTERM);
        job->stop_deadline = run_now() + g.grace_s;
    }
}

