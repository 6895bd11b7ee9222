/* A program for the launcher tests, run as every rank by hidet-nccl-run.
 *   launcher_child bootstrap      bootstrap from the environment, broadcast a real id,
 *                                 print "rank R of N id HEX"
 *   launcher_child exit R CODE    rank R exits CODE; the others wait to be stopped
 *   launcher_child kill R         rank R kills itself with SIGKILL; the others wait
 *   launcher_child finish R       rank R kills itself with SIGKILL; the others exit 0 after
 *                                 1 s, printing "rank N finished"
 *   launcher_child sleep          every rank waits to be stopped
 *   launcher_child lines          three lines on stdout, one on stderr
 *   launcher_child outlive K FILE as bootstrap; then the ranks below K destroy their bootstrap
 *                                 and exit 0, the others wait (up to 60 s) for FILE to exist,
 *                                 recover without them and broadcast a real id again, printing
 *                                 "rank R went on as rank r of n" (the rendezvous must be there)
 * With $PIDFILE_DIR set, each rank first writes its pid to $PIDFILE_DIR/pid.<rank>. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap.h"

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
    const char *piddir = getenv("PIDFILE_DIR");
    if (piddir) {
        char path[4096];
        snprintf(path, sizeof path, "%s/pid.%d", piddir, rank);
        FILE *f = fopen(path, "w");
        if (f) {
            fprintf(f, "%d\n", (int)getpid());
            fclose(f);
        }
    }
    if (strcmp(mode, "bootstrap") == 0) {
        hidet_nccl_bootstrap_h bs;
        if (bootstrap_round(&bs) != 0) return 1;
        return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
    }
    if (strcmp(mode, "outlive") == 0 && argc > 3) {
        hidet_nccl_bootstrap_h bs;
        if (bootstrap_round(&bs) != 0) return 1;
        if (rank < atoi(argv[2])) return hidet_nccl_bootstrap_destroy(bs) == HIDET_NCCL_SUCCESS ? 0 : 1;
        for (int i = 0; i < 6000 && access(argv[3], F_OK) != 0; i++) usleep(10 * 1000);
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
            usleep(200 * 1000);
            return atoi(argv[3]);
        }
        sleep(60);
        return 0;
    }
    if (strcmp(mode, "kill") == 0 && argc > 2) {
        if (rank == atoi(argv[2])) {
            usleep(200 * 1000);
            raise(SIGKILL);
        }
        sleep(60);
        return 0;
    }
    if (strcmp(mode, "finish") == 0 && argc > 2) {
        if (rank == atoi(argv[2])) {
            usleep(200 * 1000);
            raise(SIGKILL);
        }
        sleep(1);
        printf("rank %d finished\n", rank);
        return 0;
    }
    if (strcmp(mode, "sleep") == 0) {
        sleep(60);
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
