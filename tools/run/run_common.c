/* What every part of hidet-nccl-run shares, below them all: the launcher's one state (g), the
 * clock its deadlines are on, its fatal exit (which, once ranks may run, sweeps what they started
 * through the hook it is given), and the rank in the job that a rank of this node is. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "tools/run/run.h"

run_state_t g;

/* Once ranks run, what they started goes too (g.at_die; their groups are killed by the caller). */
void run_die(int code, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hidet-nccl-run: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    if (g.at_die != NULL) g.at_die();
    exit(code);
}

/* Rank i of this launcher is rank run_global_rank(i) of the job: what its tag, its log file and
 * every message name (across nodes the index i repeats on every node). */
int run_global_rank(int i) { return g.node_rank * g.n + i; }

double run_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
