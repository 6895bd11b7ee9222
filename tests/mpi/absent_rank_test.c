/* A rank that never arrives at init (run under mpirun -np 2 and 4): the last rank calls
 * MPI_Init but never hidet_nccl_bootstrap_mpi (it waits in the closing MPI_Allreduce, which ends
 * once the others have given up twice); every other rank gets HIDET_NCCL_ERROR_TIMEOUT, naming
 * the step it waited in, within the deadline plus 2 s (scaled: tests/deadline.h): no hang. The
 * deadline is HIDET_NCCL_TIMEOUT for the bootstrap alone, and options->timeout_s for
 * hidet_nccl_mpi_comm_init (with HIDET_NCCL_TIMEOUT at 300 s). The bootstrap runs on copies of
 * MPI_COMM_WORLD, so the world stays usable. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hidet_nccl/bootstrap_mpi.h"
#include "tests/deadline.h"
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
    MPI_Comm copy, copy2;
    MPI_Comm_dup(MPI_COMM_WORLD, &copy);
    MPI_Comm_dup(MPI_COMM_WORLD, &copy2);
    setenv("HIDET_NCCL_TIMEOUT", "1", 1);
    if (rank != size - 1) {
        double start = now();
        hidet_nccl_bootstrap_h bs = NULL;
        hidet_nccl_status_t st = hidet_nccl_bootstrap_mpi(copy, &bs);
        double took = now() - start;
        CHECK(st == HIDET_NCCL_ERROR_TIMEOUT);
        CHECK(bs == NULL);
        CHECK(strstr(hidet_nccl_last_error(), "within 1.0 s") != NULL);
        CHECK(took >= DEADLINE_S && took <= DEADLINE_S + hn_test_scaled(2));
        printf("rank %d: error after %.3f s: %s\n", rank, took, hidet_nccl_last_error());
        setenv("HIDET_NCCL_TIMEOUT", "300", 1);
        hidet_nccl_settings_reload();
        hidet_nccl_init_options_t options = HIDET_NCCL_INIT_OPTIONS_INIT;
        options.timeout_s = DEADLINE_S;
        int id = -1;
        start = now();
        st = hidet_nccl_mpi_comm_init(copy2, &options, &id);
        took = now() - start;
        CHECK(st == HIDET_NCCL_ERROR_TIMEOUT);
        CHECK(strstr(hidet_nccl_last_error(), "MPI_Comm_idup did not complete within 1.0 s") != NULL);
        CHECK(took >= DEADLINE_S && took <= DEADLINE_S + hn_test_scaled(2));
        printf("rank %d: options->timeout_s: error after %.3f s: %s\n", rank, took, hidet_nccl_last_error());
    } /* else absent: in the MPI_Allreduce below until the others have given up twice */
    int failures = 0, checks = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(&g_checks, &checks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0) printf("%d ranks: %d passed, %d failed\n", size, checks - failures, failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
