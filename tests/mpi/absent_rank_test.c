/* A rank that never arrives at init (run under mpirun -np 2 and 4): the last rank calls
 * MPI_Init but never hidet_nccl_bootstrap_mpi; every other rank gets
 * HIDET_NCCL_ERROR_TIMEOUT, naming the step it waited in, within the deadline plus 2 s:
 * no hang. The bootstrap runs on a copy of MPI_COMM_WORLD, so the world stays usable. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap_mpi.h"
#include "tests/mpi/mpi_check.h"

#define DEADLINE_S 1.0

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    g_rank = rank;
    MPI_Comm copy;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    setenv("HIDET_NCCL_TIMEOUT", "1", 1);
    if (rank != size - 1) {
        double start = now();
        hidet_nccl_bootstrap_h bs = NULL;
        hidet_nccl_status_t st = hidet_nccl_bootstrap_mpi(copy, &bs);
        double took = now() - start;
        CHECK(st == HIDET_NCCL_ERROR_TIMEOUT);
        CHECK(bs == NULL);
        CHECK(strstr(hidet_nccl_last_error(), "within 1.0 s") != NULL);
        CHECK(took >= DEADLINE_S && took <= DEADLINE_S + 2);
        printf("rank %d: error after %.3f s: %s\n", rank, took, hidet_nccl_last_error());
    } else {
        usleep((useconds_t)((DEADLINE_S + 0.5) * 1e6)); /* absent until the others have given up */
    }
    int failures = 0, checks = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d ranks: %d passed, %d failed\n", size, checks - failures, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
