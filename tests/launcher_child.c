/* A program for the launcher tests, run as every rank by hidet-nccl-run.
 *   launcher_child bootstrap      bootstrap from the environment, broadcast a real id,
 *                                 print "rank R of N id HEX"
 *   launcher_child exit R CODE    rank R exits CODE once every rank has started; the others
 *                                 wait to be stopped
 *   launcher_child kill R         rank R kills itself with SIGKILL once every rank has started;
 *                                 the others wait to be stopped
 *   launcher_child finish R       rank R kills itself with SIGKILL once every rank has started;
 *                                 the others, once it is gone, run 1 s more and exit 0, printing
 *                                 "rank N finished"
 *   launcher_child hold R         as bootstrap; then rank R, in its first life
 *                                 ($HIDET_NCCL_RESTART_COUNT 0), SIGKILLs itself, and the others
 *                                 hold their bootstrap until stopped
 *   launcher_child sleep          every rank waits to be stopped
 *   launcher_child lines          three lines on stdout, one on stderr
 *   launcher_child outlive K FILE as bootstrap; then the ranks below K destroy their bootstrap
 *                                 and exit 0, the others wait (60 s, scaled) for FILE to exist,
 *                                 recover without them and broadcast a real id again, printing
 *                                 "rank R went on as rank r of n" (the rendezvous must be there)
 * With $PIDFILE_DIR set, each rank first writes its pid to $PIDFILE_DIR/pid.<rank>; exit, kill and
 * finish need it: that every rank has started, and that rank R is gone, is read there. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"
#include "tests/deadline.h"
#include "tests/proc_state.h"

static const char *g_piddir;

/* The pid rank wrote in its pid file, or 0 if there is none yet. */
static int pid_of(int rank) {
    char path[4096];
    snprintf(path, sizeof path, "%s/pid.%d", g_piddir, rank);
    FILE *f = fopen(path, "r");
    int pid = 0;
    if (f) {
        if (fscanf(f, "%d", &pid) != 1) pid = 0;
        fclose(f);
    }
    return pid;
}

static int all_started(int n) {
    for (int r = 0; r < n; r++)
        if (pid_of(r) == 0) return 0;
    return 1;
}

/* Not running: no such process, or a zombie. */
static int is_gone(int pid) {
    char state = hn_test_proc_state(pid);
    return state == 0 || state == 'Z';
}

/* Rank `failing` waits for every rank to start before it fails (else the launcher stops the job
 * before some start, and they leave no pid to check); exits 3 if they did not start. */
static void await_the_job(void) {
    const char *n = getenv("HIDET_NCCL_WORLD_SIZE");
    int ok = 0;
    if (g_piddir == NULL || n == NULL) {
        fprintf(stderr, "launcher_child: this mode needs PIDFILE_DIR and HIDET_NCCL_WORLD_SIZE\n");
        exit(3);
    }
    HN_WAIT_FOR(ok, all_started(atoi(n)), 60, "every rank's pid file");
    if (!ok) exit(3);
}

/* A bootstrap from the environment and a real id broadcast from rank 0, printed as
 * "rank R of N id HEX": 0, or 1 with the message on stderr. */
static int bootstrap_round(hidet_nccl_bootstrap_h *bs) {
    int r, n;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (hidet_nccl_bootstrap_from_env(bs) != HIDET_NCCL_SUCCESS ||
        hidet_nccl_bootstrap_rank(*bs, &r, &n) != HIDET_NCCL_SUCCESS ||
        (r == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) ||
        hidet_nccl_bootstrap_broadcast(*bs, &id, sizeof id, 0, 0) != HIDET_NCCL_SUCCESS) {
        fprintf(stderr, "%s\n", hidet_nccl_last_error());
        return 1;
    }
    printf("rank %d of %d id ", r, n);
    for (size_t i = 0; i < sizeof id; i++) printf("%02x", (unsigned char)id.internal[i]);
    printf("\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "";
    int rank = atoi(getenv("HIDET_NCCL_RANK") ? getenv("HIDET_NCCL_RANK") : "-1");
    g_piddir = getenv("PIDFILE_DIR");
    if (g_piddir) { /* written whole, then renamed into place: a pid file that is there is complete */
        char path[4096], tmp[4200];
        snprintf(path, sizeof path, "%s/pid.%d", g_piddir, rank);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        FILE *f = fopen(tmp, "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
            rename(tmp, path);
        }
    }
    if (strcmp(mode, "bootstrap") == 0) {
        hidet_nccl_bootstrap_h bs;
        if (bootstrap_round(&bs) != 0) return 1;
        return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
    }
    if (strcmp(mode, "hold") == 0 && argc > 2) {
        hidet_nccl_bootstrap_h bs;
        if (bootstrap_round(&bs) != 0) return 1;
        const char *count = getenv("HIDET_NCCL_RESTART_COUNT");
        if (rank == atoi(argv[2]) && count != NULL && strcmp(count, "0") == 0) raise(SIGKILL);
        sleep(600); /* until stopped, holding the bootstrap */
        return 0;
    }
    if (strcmp(mode, "outlive") == 0 && argc > 3) {
        hidet_nccl_bootstrap_h bs;
        if (bootstrap_round(&bs) != 0) return 1;
        if (rank < atoi(argv[2])) return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
        int told = 0;
        HN_WAIT_FOR(told, access(argv[3], F_OK) == 0, 60, argv[3]);
        if (!told) return 1;
        int r, n, kept = 0;
        ncclUniqueId id;
        memset(&id, 0, sizeof id);
        if (hidet_nccl_bootstrap_recover(bs, 0, NULL, &kept) != HIDET_NCCL_SUCCESS ||
            hidet_nccl_bootstrap_rank(bs, &r, &n) != HIDET_NCCL_SUCCESS ||
            (r == 0 && hidet_nccl_get_unique_id(&id) != HIDET_NCCL_SUCCESS) ||
            hidet_nccl_bootstrap_broadcast(bs, &id, sizeof id, 0, 0) != HIDET_NCCL_SUCCESS) {
            fprintf(stderr, "rank %d: %s\n", rank, hidet_nccl_last_error());
            return 1;
        }
        printf("rank %d went on as rank %d of %d\n", rank, r, n);
        return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
    }
    if (strcmp(mode, "exit") == 0 && argc > 3) {
        if (rank == atoi(argv[2])) {
            await_the_job();
            return atoi(argv[3]);
        }
        sleep(600); /* until stopped */
        return 0;
    }
    if (strcmp(mode, "kill") == 0 && argc > 2) {
        if (rank == atoi(argv[2])) {
            await_the_job();
            raise(SIGKILL);
        }
        sleep(600); /* until stopped */
        return 0;
    }
    if (strcmp(mode, "finish") == 0 && argc > 2) {
        int failing = atoi(argv[2]), gone = 0;
        if (rank == failing) {
            await_the_job();
            raise(SIGKILL);
        }
        HN_WAIT_FOR(gone, pid_of(failing) != 0 && is_gone(pid_of(failing)), 60, "the failing rank's end");
        if (!gone) return 3;
        sleep(1); /* the launcher keeps going while they work on */
        printf("rank %d finished\n", rank);
        return 0;
    }
    if (strcmp(mode, "sleep") == 0) {
        sleep(600); /* until stopped */
        return 0;
    }
    if (strcmp(mode, "lines") == 0) {
        printf("first line\nsecond line\nthird line\n");
        fflush(stdout);
        fprintf(stderr, "an error line\n");
        return 0;
    }
    fprintf(stderr, "launcher_child: unknown mode '%s'\n", mode);
    return 2;
}
